"""The suite's topic, service and frame names, defined once.

Nodes take these as parameter defaults, the graph file may remap them, and consumers
(policies, rosbag recorders, viewers) subscribe to the canonical ones: the camera on
realsense2_camera's default topics and frame, the robot on /joint_states.
"""

from types import MappingProxyType

# Canonical topics: what the bridge publishes, whichever robot (real or digital) is active.
IMAGE_TOPIC = "/camera/camera/color/image_raw"
CAMERA_INFO_TOPIC = "/camera/camera/color/camera_info"
JOINT_STATES_TOPIC = "/joint_states"
ACTION_TOPIC = "/rynn/action"
MODE_TOPIC = "/rynn/mode"
STATUS_TOPIC = "/rynn/status"
DIAGNOSTICS_TOPIC = "/diagnostics"
TF_TOPIC = "/tf"
TF_STATIC_TOPIC = "/tf_static"
ROBOT_DESCRIPTION_TOPIC = "/robot_description"

# The two camera sources behind the bridge.
REAL_IMAGE_TOPIC = "/rynn/real/camera/color/image_raw"
REAL_CAMERA_INFO_TOPIC = "/rynn/real/camera/color/camera_info"
DIGITAL_IMAGE_TOPIC = "/rynn/digital/camera/color/image_raw"
DIGITAL_CAMERA_INFO_TOPIC = "/rynn/digital/camera/color/camera_info"

# The operator side.
HANDS_TOPIC = "/rynn/operator/hands"  # glove node: wrist-relative hand skeletons
CAMERA_SKELETON_TOPIC = "/rynn/operator/skeleton_camera"  # retarget node: skeleton in the camera frame
COMMAND_JOINT_STATES_TOPIC = "/rynn/command/joint_states"  # retarget node: the commanded joints

# Services.
SET_MODE_SERVICE = "/rynn/set_mode"
RECORDER_SERVICES = MappingProxyType({action: f"/rynn/recorder/{action}" for action in ("start", "stop", "discard")})

# Extra topics of generated (simulated) episodes' bags, read back by the world-model training data.
REFERENCE_IMAGE_TOPIC = "/rynn/reference_image"
EPISODE_TOPIC = "/rynn/episode"

# Frames (REP-103 robot base; the camera's optical frame as realsense2_camera names it).
BASE_FRAME = "base_link"
CAMERA_FRAME = "camera_color_optical_frame"
