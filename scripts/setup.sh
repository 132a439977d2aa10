#!/usr/bin/env bash
# One-command setup of the Rynn suite on a Debian/Ubuntu machine without a
# ROS 2 install: Debian build/render packages, a .venv with the pinned ROS 2
# Jazzy wheels and the Python stack, the generated LCM bindings, and a colcon
# build of the four packages into the venv (so `.venv/bin/python` imports
# rclpy and rynn_teleop_msgs with nothing to source). Safe to re-run.
#
# Environment: PYTHON (interpreter for the venv, default python3),
#              RYNN_VENV (venv path, default <repo>/.venv),
#              SKIP_DEPS=1 (only rebuild: skip Debian and pip steps; `make build`).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${RYNN_VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3}
DEB_PACKAGES=(cmake g++ make python3-dev python3-venv libegl1 libgl1 libosmesa6 libusb-1.0-0 chromium chromium-driver)

step() { printf '\n==> %s\n' "$*"; }
die() { printf '\nsetup: error: %s\n' "$*" >&2; exit 1; }

if [[ ${SKIP_DEPS:-0} != 1 ]]; then
step "Debian packages: ${DEB_PACKAGES[*]}"
bash "$ROOT/scripts/install_system_deps.sh" "${DEB_PACKAGES[@]}"

step "Python virtual environment: $VENV"
command -v "$PYTHON" >/dev/null || die "no Python interpreter '$PYTHON' (set PYTHON=/path/to/python3.11)"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))' \
  || die "Python 3.11 or newer is needed (the pins are tested on 3.11); '$PYTHON' is $("$PYTHON" -V 2>&1) (set PYTHON=python3.11)"
[[ -x $VENV/bin/python ]] || "$PYTHON" -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
PY=$VENV/bin/python

step "Python packages (pinned by requirements/constraints.txt)"
"$PY" -m pip install -q --disable-pip-version-check \
  -c "$ROOT/requirements/constraints.txt" -r "$ROOT/requirements/requirements.txt" \
  || die "pip install failed (see above); the constraints pin every version, so a missing wheel names the culprit"
# LeRobot (the policies of rynn_world.policy) without its declared dependencies: they cap torch,
# diffusers and huggingface_hub below this project's pins; what its ACT policy imports is in
# requirements.txt, the versions in constraints.txt. torchvision goes to $VENV/lerobot_extras, which
# only rynn_world.policy puts on sys.path: the one wheel for torch 2.13 is a CUDA build that does not
# import with the CPU torch, and transformers (diffusers) imports torchvision whenever it is installed.
"$PY" -m pip install -q --disable-pip-version-check --no-deps -c "$ROOT/requirements/constraints.txt" lerobot \
  || die "pip install lerobot failed (see above)"
"$PY" -m pip install -q --disable-pip-version-check --no-deps --upgrade --target "$VENV/lerobot_extras" \
  -c "$ROOT/requirements/constraints.txt" torchvision || die "pip install torchvision (lerobot_extras) failed (see above)"
fi
PY=$VENV/bin/python
[[ -x $PY ]] || die "no venv at $VENV: run 'make setup' first"

step "Repair include paths exported by the ROS 2 message wheels"
"$PY" "$ROOT/scripts/fix_ros_wheel_cmake.py" "$VENV"

# colcon and the rosidl/ament CMake code read the ament index from the environment.
export VIRTUAL_ENV=$VENV PATH=$VENV/bin:$PATH AMENT_PREFIX_PATH=$VENV CMAKE_PREFIX_PATH=$VENV
COLCON=(colcon --log-base "$ROOT/log" build --merge-install --install-base "$VENV"
        --event-handlers console_cohesion- summary+ status-)

if ! "$PY" -c 'import tf2_msgs.msg' 2>/dev/null; then
  step "tf2_msgs is not on PyPI: building the standard TFMessage for the test environment"
  SUPPORT=$ROOT/build/test_support/tf2_msgs
  rm -rf "$SUPPORT" && mkdir -p "$(dirname "$SUPPORT")"
  cp -r "$ROOT/test/support/tf2_msgs" "$SUPPORT"
  mv "$SUPPORT/package.xml.in" "$SUPPORT/package.xml"
  (cd "$ROOT" && "${COLCON[@]}" --base-paths "$SUPPORT" --build-base "$ROOT/build/test_support_build") \
    || die "building tf2_msgs failed (see log/)"
fi

if [[ -x $ROOT/scripts/generate_lcm_types.sh ]]; then
  step "LCM bindings (lcm-gen)"
  "$ROOT/scripts/generate_lcm_types.sh"
fi

step "colcon build: rynn_teleop_msgs, rynn_common, rynn_retarget, rynn_robot_bridge, rynn_world"
(cd "$ROOT" && "${COLCON[@]}" --base-paths src --build-base "$ROOT/build") || die "colcon build failed (see log/latest_build)"

step "Point the venv's Python at its own ament index (no setup.bash to source)"
# A .pth line that starts with "import" runs at interpreter start: `.venv/bin/python -m ...` then finds
# the packages' share/ directories (messages, config) exactly as a sourced workspace would.
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo 'import os, sys; os.environ.setdefault("AMENT_PREFIX_PATH", sys.prefix)' > "$SITE/rynn_ament_prefix.pth"

step "Check"
env -u AMENT_PREFIX_PATH "$PY" - <<'EOF' || die "the installed environment does not import (see above)"
import rclpy, tf2_msgs.msg
from rynn_teleop_msgs.msg import RobotAction, BimanualSkeleton, TeleopStatus
from rynn_teleop_msgs.srv import SetMode
import rynn_common, rynn_retarget, rynn_world, rynn_robot_bridge
from ament_index_python.packages import get_package_share_directory
get_package_share_directory("rynn_teleop_msgs")
print("rclpy, rynn_teleop_msgs, tf2_msgs and the four Python packages import")
EOF
printf '\nSetup done. Run the tests with: make test\n'
