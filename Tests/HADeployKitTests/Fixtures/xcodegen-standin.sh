#!/bin/sh
# A STAND-IN for XcodeGen on Linux: records that it ran and creates the project directory.
echo "xcodegen $*" >> standin.log
mkdir -p HADashboard.xcodeproj
echo "Created project at HADashboard.xcodeproj"
