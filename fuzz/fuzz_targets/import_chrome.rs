#![no_main]
use framelab::import::Format;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    framelab_fuzz::import(Format::Chrome, data);
});
