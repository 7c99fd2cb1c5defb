#!/bin/sh
# The programs the end-to-end tests drive besides framelab: ab (Debian's apache2-utils) and
# python3 for tests/http_ab_e2e.rs. Installs what is missing with apt-get (as root, or
# through sudo); tests that need a program still absent say so and skip.
set -eu
missing=""
command -v ab >/dev/null 2>&1 || missing="$missing apache2-utils"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
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
