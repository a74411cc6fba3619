#!/bin/sh
# .venv-pmd3/: pymobiledevice3, the second, independent client the virtual devices are checked
# against (PyMobileDevice3FidelityTests). Pinned to one release: its protocol expectations (e.g. the
# crash mover's "ping\0") are what the twins are held to.
exec "$(dirname "$0")/pinned-venv.sh" pmd3 pymobiledevice3==11.45.0
