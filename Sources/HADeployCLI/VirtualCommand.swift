import ArgumentParser
import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import HADeployVirtual
import Logging

struct VirtualCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "virtual",
        abstract: "Run virtual iOS devices for the matrix behind a virtual usbmuxd, until interrupted.",
        discussion: """
            Each device in devices.yaml that a virtual device can stand for gets an
            emulated twin speaking the real usbmuxd, lockdownd and service protocols; the
            Debian libimobiledevice tools (and hadeploy) use them through
            USBMUXD_SOCKET_ADDRESS. State (pair records, installed apps, mounted image,
            crash logs) survives restarts. Examples:
              hadeploy virtual                    every twin, socket in .hadeploy/virtual/
              hadeploy virtual --only mini4 ipad2 --port 27015
              export USBMUXD_SOCKET_ADDRESS=UNIX:$PWD/.hadeploy/virtual/usbmuxd.sock
              idevice_id -l
              hadeploy virtual --wifi-only        Wi-Fi devices only (mDNS); reach
                                                  them through `hadeploy muxer`
            Faults are injected at run time through <state>/control.sock (JSON lines).
            """)

    @Option(name: .long, help: ArgumentHelp("The device matrix.", valueName: "path"))
    var config: String = "devices.yaml"

    @Option(
        name: .customLong("env-file"), help: ArgumentHelp("Values for ${VARS} (UDIDs).", valueName: "path"))
    var envFile: String = ".env"

    @Option(
        name: .long, parsing: .upToNextOption, help: ArgumentHelp("Only these devices.", valueName: "name"))
    var only: [String] = []

    @Option(name: .long, help: ArgumentHelp("Listen on this UNIX socket.", valueName: "path"))
    var socket: String?

    @Option(
        name: .long, help: ArgumentHelp("Listen on 127.0.0.1:N instead (0 = any free port).", valueName: "n"))
    var port: Int?

    @Option(name: .long, help: ArgumentHelp("State directory.", valueName: "dir"))
    var state: String = ".hadeploy/virtual"

    @Flag(
        name: .customLong("wifi-only"),
        help: ArgumentHelp(
            "Every twin reached through usbmuxd is a Wi-Fi device: listed by no usbmuxd (as on Linux), "
                + "lockdownd on its own address, announced over mDNS (_apple-mobdev2._tcp)."))
    var wifiOnly = false

    func validate() throws {
        if socket != nil && port != nil { throw ValidationError("--socket and --port conflict: choose one") }
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be 0...65535") }
        if port != nil, HostPlatform.current == .macOS {
            // Pair records are read through this usbmuxd; on Linux a connection from another user's
            // process is closed (/proc/net/tcp names its owner), macOS has no such table.
            throw ValidationError(
                "--port is Linux-only: on macOS any local user could read the twins' pair records "
                    + "through a TCP usbmuxd; use the UNIX socket (the default, or --socket PATH)")
        }
    }

    func run(_ context: HADeployContext) async throws {
        let workspace = Workspace(context: context, configPath: config, envFilePath: envFile)
        var matrix = try workspace.loadMatrix()
        if wifiOnly { matrix = VirtualMatrix.wifiOnly(matrix) }
        let (variables, _) = try workspace.loadVariables()
        let devices = only.isEmpty ? matrix.devices : try TargetResolver(matrix: matrix).resolve(only)
        let virtual = VirtualMatrix(matrix: matrix, devices: devices, variables: variables)
        for (device, reason) in virtual.skipped {
            context.message("\(device.id): no virtual twin: \(reason)")
        }
        guard !virtual.twins.isEmpty else {
            throw ValidationError("none of these devices can be virtual")
        }
        var address: VirtualTwinsAddress?
        if let socket { address = .unixSocket(context.url(for: socket).path) }
        if let port { address = .tcp(port: port) }
        var logger = Logger(label: "hadeploy.virtual")
        logger.logLevel = context.environment["HADEPLOY_DEBUG"] == nil ? .warning : .debug
        let lock = try StateFolderLock.acquire(
            context.url(for: state), displayName: state, fileSystem: context.fileSystem)
        let (usbmuxd, value) = try await virtual.start(
            stateDirectory: context.url(for: state), address: address, logger: logger,
            fileSystem: context.fileSystem, wifiOnly: wifiOnly)
        for info in await usbmuxd.devices() {
            // A network twin is reached at its own address (`-n` for the Debian tools).
            let wifi = (try? await usbmuxd.networkAddress(udid: info.udid)).flatMap { $0 }
            context.message(
                "  \(info.name): \(info.deviceName) \(info.productType) iOS \(info.productVersion) "
                    + "\(info.cpuArchitecture) udid \(info.udid)"
                    + (wifi.map { ", Wi-Fi at \($0)" + (wifiOnly ? " (announced over mDNS)" : "") } ?? ""))
        }
        context.print("USBMUXD_SOCKET_ADDRESS=\(value)")
        context.message("virtual devices running; Ctrl-C to stop")
        let clock = context.clock
        let waiter = Task { while !Task.isCancelled { try? await clock.sleep(for: .seconds(3600)) } }
        let signals = SignalCancellation { waiter.cancel() }
        await waiter.value
        signals.cancel()
        await usbmuxd.stop()
        withExtendedLifetime(lock) {}
    }
}
