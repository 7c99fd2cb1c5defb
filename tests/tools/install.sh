#!/bin/sh
# The programs the end-to-end tests drive besides framelab: ab (Debian's apache2-utils),
# python3 for tests/http_ab_e2e.rs, and python3's venv (with pip) for tests/python_e2e.rs,
# which installs the Python package into a virtual environment. Installs what is missing
# with apt-get (as root, or through sudo); tests that need a program still absent say so
# and skip (.ci/run makes the Python one fail instead).
set -eu
missing=""
command -v ab >/dev/null 2>&1 || missing="$missing apache2-utils"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
# Debian splits venv and ensurepip out of python3; a python3 of its own (pyenv) has them.
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing="$missing python3-venv"
if [ -z "$missing" ]; then
    echo "test tools: all present"
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "test tools: installing$missing"
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q $missing
