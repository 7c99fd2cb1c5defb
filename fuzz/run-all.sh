#!/bin/bash
# Runs one libFuzzer per importer at once (10 processes: give it 10+ cores), each for $1
# seconds, with the one-binary target built by
#   cargo +nightly fuzz build -O -a -s none import_by_env && strip -o DIR/fuzz-import target/x86_64-unknown-linux-gnu/release/import_by_env
# DIR holds fuzz-import, this script, seeds/FORMAT/ and optionally corpus.tar.gz (a
# previous run's corpora, to go on from). Writes corpus.tar.gz, corpus-min.tar.gz (each
# corpus minimised by -merge=1) and logs.tar.gz to $OUT (default: DIR).
set -u
secs=$1
OUT=${OUT:-$(cd "$(dirname "$0")" && pwd)}
cd "$(dirname "$0")"
work=/tmp/fuzzwork; rm -rf $work; mkdir -p $work
if [ -f corpus.tar.gz ]; then tar -xzf corpus.tar.gz -C $work; fi
chmod +x fuzz-import
nproc; ./fuzz-import -help=1 2>&1 | head -2
for fmt in chrome perfetto wayland presentmon mangohud ffmpeg bpftrace csv jsonl detect; do
  mkdir -p $work/corpus/$fmt $work/art/$fmt
  seeds=seeds/$fmt; [ -d $seeds ] || seeds=
  FRAMELAB_FUZZ_FORMAT=$fmt ./fuzz-import $work/corpus/$fmt $seeds \
    -max_total_time=$secs -max_len=65536 -rss_limit_mb=4096 -timeout=10 -print_final_stats=1 \
    -artifact_prefix=$work/art/$fmt/ > $work/$fmt.log 2>&1 &
done
wait
for fmt in chrome perfetto wayland presentmon mangohud ffmpeg bpftrace csv jsonl detect; do
  echo "== $fmt: $(grep -c 'ERROR\|panicked\|deadly signal' $work/$fmt.log) failures; $(ls $work/corpus/$fmt | wc -l) corpus files; artifacts: $(ls $work/art/$fmt | wc -l)"
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs" $work/$fmt.log | tr '\n' ' '; echo
  grep -m3 -A12 "panicked\|ERROR" $work/$fmt.log | head -30
done
# Minimise each corpus (the inputs that keep its coverage) for committing.
for fmt in chrome perfetto wayland presentmon mangohud ffmpeg bpftrace csv jsonl detect; do
  mkdir -p $work/min/$fmt
  FRAMELAB_FUZZ_FORMAT=$fmt ./fuzz-import -merge=1 -max_len=65536 $work/min/$fmt $work/corpus/$fmt > $work/$fmt-merge.log 2>&1 &
done
wait
for fmt in chrome perfetto wayland presentmon mangohud ffmpeg bpftrace csv jsonl detect; do echo "$fmt minimised: $(ls $work/min/$fmt | wc -l) files"; done
tar -czf $OUT/corpus.tar.gz -C $work corpus
tar -czf $OUT/corpus-min.tar.gz -C $work min
tar -czf $OUT/logs.tar.gz -C $work $(cd $work && ls *.log) art
