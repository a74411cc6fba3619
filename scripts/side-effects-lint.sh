#!/usr/bin/env bash
# The context owns every side effect: no `FileManager.default`, `Date()` or `ProcessInfo` in Sources
# outside the live implementations (HADeployCore's Live* types) and the emulator's own clock.
# Lists every offending line and fails when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

allowed=(
    Sources/HADeployCore/LiveFileSystem.swift
    Sources/HADeployCore/WallClock.swift
    Sources/HADeployCore/SystemEnvironment.swift
    Sources/VirtualDevice/Device/EmulatorClock.swift
)

# Files not converted yet: each must still need it (a converted file left here fails too), and the
# list only shrinks.
pending=(
    Sources/HADeployKit/Adopt/HostDeviceScan.swift
    Sources/HADeployKit/Adopt/ProjectAdopter.swift
    Sources/HADeployKit/Build/BuildExecutor.swift
    Sources/HADeployKit/Build/BuildMachine.swift
    Sources/HADeployKit/Build/BuildRunner.swift
    Sources/HADeployKit/Build/BuildSession.swift
    Sources/HADeployKit/Build/RemoteBuildMachine.swift
    Sources/HADeployKit/Build/SourceSnapshot.swift
    Sources/HADeployKit/Deploy/ArtifactSource.swift
    Sources/HADeployKit/Deploy/ArtifactStaging.swift
    Sources/HADeployKit/Deploy/DemoAppBuilder.swift
    Sources/HADeployKit/Deploy/DeployExecutor.swift
    Sources/HADeployKit/Deploy/DeployRecords.swift
    Sources/HADeployKit/Deploy/DeploySession.swift
    Sources/HADeployKit/Deploy/DevicePipeline.swift
    Sources/HADeployKit/Deploy/ReportWriter.swift
    Sources/HADeployKit/Deploy/Reporters.swift
    Sources/HADeployKit/Deploy/SSHLogin.swift
    Sources/HADeployKit/Deploy/StateFolderLock.swift
    Sources/HADeployKit/DeviceInventory.swift
    Sources/HADeployKit/Drivers/AppleDeviceDiscovery.swift
    Sources/HADeployKit/Drivers/CrashReportScanner.swift
    Sources/HADeployKit/Drivers/DevicectlDriver.swift
    Sources/HADeployKit/Drivers/DriverDeadlines.swift
    Sources/HADeployKit/Drivers/LaunchDefaultsWriter.swift
    Sources/HADeployKit/Drivers/MacAppLocations.swift
    Sources/HADeployKit/Drivers/MacDriver.swift
    Sources/HADeployKit/Drivers/PyMobileDevice3Driver.swift
    Sources/HADeployKit/Drivers/RosettaSimDriver.swift
    Sources/HADeployKit/Drivers/SSHDriver.swift
    Sources/HADeployKit/Drivers/SimctlDriver.swift
    Sources/HADeployKit/Drivers/TunneldProbe.swift
    Sources/HADeployVirtual/JailbreakTwinProcess.swift
    Sources/HADeployVirtual/VirtualMatrix.swift
    Sources/HADeployVirtual/VirtualTwinsRun.swift
    Sources/MobileDevice/AppArtifact.swift
    Sources/MobileDevice/AppDirectoryWalker.swift
    Sources/MobileDevice/IPAArchive.swift
    Sources/MobileDevice/InstallRecordStore.swift
    Sources/MobileDevice/USBDevice+CrashReports.swift
    Sources/MobileDevice/USBDevice+Install.swift
    Sources/MobileDevice/USBDevice+Launch.swift
    Sources/MobileDevice/UsbmuxDirectory.swift
    Sources/SSHTransport/ForwardPump.swift
    Sources/SSHTransport/JailbreakDeployer.swift
    Sources/SSHTransport/KnownHostsFile.swift
    Sources/SSHTransport/LocalTree.swift
    Sources/SSHTransport/SSHConnectionConfig.swift
    Sources/SSHTransport/SessionHandle.swift
    Sources/SSHTransport/TCPConnector.swift
    Sources/VirtualDevice/App/AppDefaults.swift
    Sources/VirtualDevice/App/AppKeychain.swift
    Sources/VirtualDevice/App/AppLogFile.swift
    Sources/VirtualDevice/CoreDevice/DTXServiceHub.swift
    Sources/VirtualDevice/Device/ConfinedRoot.swift
    Sources/VirtualDevice/Device/CrashReportWriter.swift
    Sources/VirtualDevice/Device/DeviceLog.swift
    Sources/VirtualDevice/Device/DevicePaths.swift
    Sources/VirtualDevice/Device/DeviceRuntime.swift
    Sources/VirtualDevice/Device/DeviceStorage.swift
    Sources/VirtualDevice/Device/PairingCertificateFactory.swift
    Sources/VirtualDevice/Install/AppBundleInfo.swift
    Sources/VirtualDevice/Services/AFCService.swift
    Sources/VirtualDevice/Services/HouseArrestService.swift
    Sources/VirtualDevice/Services/ImageMounterService.swift
    Sources/VirtualDevice/Services/InstallationProxyService.swift
    Sources/VirtualDevice/Services/LockdownService.swift
    Sources/VirtualDevice/Usbmuxd/PairRecordStore.swift
)

pattern='FileManager\.default|(^|[^A-Za-z0-9_.])Date\(\)|(^|[^A-Za-z0-9_])ProcessInfo([^A-Za-z0-9_]|$)'
status=0
hits=$(grep -rnE "$pattern" Sources --include='*.swift' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
for file in "${allowed[@]}" "${pending[@]}"; do
    hits=$(printf '%s\n' "$hits" | grep -v "^$file:" || true)
done
if [ -n "$hits" ]; then
    echo "side effects outside the context (use its fileSystem, clock or system):" >&2
    printf '%s\n' "$hits" >&2
    status=1
fi
for file in "${pending[@]}"; do
    if ! grep -qE "$pattern" "$file" 2>/dev/null; then
        echo "$file: no longer needs to be listed as pending in $0" >&2
        status=1
    fi
done
exit $status
