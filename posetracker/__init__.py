"""PoseTracker: multi-person pose tracking from video (the library; the app is ``ui/``).

Nothing here connects anywhere at run time. ONNX Runtime (>= 1.29) sends usage telemetry from Linux and macOS
too, looking up ``mobile.events.data.microsoft.com`` on its first session; ``ORT_DISABLE_TELEMETRY=1``, set here
before anything imports it, switches that off for the whole process (its own documented opt-out; a user's own
setting of the variable is kept). ``tests/project/test_no_network.py`` runs ``process`` under strace to prove it.
"""

import os as _os

_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
