#!/usr/bin/env bash
# Install the Debian packages named as arguments if any is missing; name the
# missing ones and how to install them when that is not possible.
# RYNN_APT_UPDATE=0 skips `apt-get update` (used by the tests).
set -euo pipefail

die() { printf '\nsetup: error: %s\n' "$*" >&2; exit 1; }

missing_debs() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

command -v dpkg-query >/dev/null || die "this setup needs a Debian/Ubuntu system (dpkg-query not found); install by hand: $*"
mapfile -t MISSING < <(missing_debs "$@")
if ((${#MISSING[@]} == 0)); then
  echo "all present"
  exit 0
fi
echo "installing: ${MISSING[*]}"
if [[ $(id -u) -eq 0 ]]; then SUDO=(); elif command -v sudo >/dev/null; then SUDO=(sudo); else
  die "missing Debian packages: ${MISSING[*]}; install them as root: apt-get install ${MISSING[*]}"
fi
if [[ ${RYNN_APT_UPDATE:-1} != 0 ]]; then
  "${SUDO[@]}" apt-get update -qq || die "apt-get update failed; install by hand: apt-get install ${MISSING[*]}"
fi
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${MISSING[@]}" \
  || die "could not install Debian packages: ${MISSING[*]} (try: apt-get install ${MISSING[*]})"
mapfile -t STILL < <(missing_debs "${MISSING[@]}")
((${#STILL[@]} == 0)) || die "Debian packages still missing after apt-get: ${STILL[*]}"
