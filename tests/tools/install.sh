#!/bin/sh
# The programs the end-to-end tests drive besides framelab: ab (Debian's apache2-utils) and
# python3 for tests/e2e/bench/http_ab.rs, python3's venv (with pip) for tests/e2e/sdk/python.rs, which
# installs the Python package into a virtual environment, and chromium for
# tests/e2e/report/html_browser.rs (the HTML reports opened in a real browser), and postgresql for
# tests/e2e/history/basics.rs (a real server started in a temporary directory), and for
# tests/e2e/probes.rs <sys/sdt.h> (systemtap-sdt-dev: the USDT test program), bpftrace (the
# side-by-side test) and ffmpeg with libx264 (a real binary probed). Installs what is missing
# with apt-get (as root, or through sudo); tests that need a program still absent say so and
# skip (.ci/run makes the Python and PostgreSQL ones fail instead).
set -eu
missing=""
command -v ab >/dev/null 2>&1 || missing="$missing apache2-utils"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
# Debian splits venv and ensurepip out of python3; a python3 of its own (pyenv) has them.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing="$missing python3-venv"
# Debian keeps initdb and pg_ctl under /usr/lib/postgresql/VERSION/bin, off PATH.
command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
    || missing="$missing postgresql"
# The PostgreSQL TLS test makes its CA and server certificates with the openssl program (a
# test tool only: framelab itself builds and runs without OpenSSL).
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
# The probe tests: USDT probes compiled from <sys/sdt.h>, bpftrace beside framelab, and a
# real distribution binary (ffmpeg's libx264) probed.
echo "#include <sys/sdt.h>" | cc -E - >/dev/null 2>&1 || missing="$missing systemtap-sdt-dev"
command -v bpftrace >/dev/null 2>&1 || missing="$missing bpftrace"
command -v ffmpeg >/dev/null 2>&1 || missing="$missing ffmpeg"
browser=""
command -v chromium >/dev/null 2>&1 || browser="chromium"
if [ -z "$missing" ] && [ -z "$browser" ]; then
    echo "test tools: all present"
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "test tools: installing$missing $browser"
$sudo apt-get update -q
if [ -n "$missing" ]; then
    # shellcheck disable=SC2086
    $sudo apt-get install -y -q $missing
fi
# A browser is large and not everywhere installable: without it the browser tests skip,
# saying so, and the rest still runs.
if [ -n "$browser" ] && ! $sudo apt-get install -y -q --no-install-recommends chromium; then
    echo "test tools: chromium could not be installed; tests/e2e/report/html_browser.rs will skip"
fi
