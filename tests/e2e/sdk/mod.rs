//! The SDK from C and from Python.

mod c_abi;
mod python;
