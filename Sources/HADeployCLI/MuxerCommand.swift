import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit

struct MuxerCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "muxer",
        abstract: "Serve a usbmuxd socket that lists this machine's USB devices and the Wi-Fi devices found.",
        discussion: """
            Linux's usbmuxd lists USB devices only. This socket lists them (from the
            system usbmuxd, or --usbmuxd, when one runs) and every iOS device that
            announces itself for Wi-Fi sync over multicast DNS (_apple-mobdev2._tcp), as
            Network entries. The Debian tools (`-n`) and pymobiledevice3 reach them through
            it: no usbmuxd2, netmuxd, tunneld or root. Pair records come from hadeploy's
            folder (`hadeploy pair`), then from the system usbmuxd. Until interrupted, in a
            folder only you can change ($XDG_RUNTIME_DIR; on a Mac $TMPDIR), never a fixed
            name in /tmp, which another user could take first:
              hadeploy muxer --socket "$XDG_RUNTIME_DIR/hadeploy-usbmuxd"
              export USBMUXD_SOCKET_ADDRESS="UNIX:$XDG_RUNTIME_DIR/hadeploy-usbmuxd"
              idevice_id -n; pymobiledevice3 usbmux list
            In a checkout whose devices.yaml puts devices on USB hosts (usb_host:
            ssh://…), it lists those too, each host's usbmuxd through an SSH tunnel that
            passes that host's devices only: every route in one socket.
            """)

    @OptionGroup var project: ProjectOptions

    @Option(name: .long, help: ArgumentHelp("Serve on this UNIX socket (owner-only).", valueName: "path"))
    var socket: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The usbmuxd whose USB devices it lists too (default: USBMUXD_SOCKET_ADDRESS, else the system's).",
            valueName: "address"))
    var usbmuxd: String?

    @Option(
        name: .customLong("pair-records"),
        help: ArgumentHelp(
            "hadeploy's pair records (default: the user's, as `hadeploy pair` keeps them).", valueName: "dir")
    )
    var pairRecords: String?

    func run(_ context: HADeployContext) async throws {
        let path = context.url(for: socket).path
        let upstream =
            usbmuxd ?? context.environment["USBMUXD_SOCKET_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        let records =
            pairRecords.map { context.url(for: $0) }
            ?? PairRecordLocation.folder(environment: context.environment, fileSystem: context.fileSystem)
        // The USB hosts of this checkout's devices.yaml, when there is one.
        var hosts: USBHostRoutes?
        let workspace = project.workspace(context)
        if context.fileSystem.fileExists(atPath: context.url(for: project.config).path) {
            let matrix = try workspace.loadMatrix()
            let (variables, _) = try workspace.loadVariables()
            let opened = await USBHostRoutes.open(
                matrix: matrix, variables: variables, fileSystem: context.fileSystem)
            for problem in opened.problems { context.message("warning: \(problem)") }
            hosts = opened
        }
        do {
            try WiFiMuxer.serve(
                at: path, upstream: upstream, hosts: hosts, pairRecords: records,
                fileSystem: context.fileSystem)
        } catch {
            await hosts?.close()
            context.message("error: \(error)")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
        context.print("USBMUXD_SOCKET_ADDRESS=UNIX:\(path)")
        let routes = hosts.map { $0.others.isEmpty ? "" : ", \($0.others.count) USB host(s)' devices" } ?? ""
        context.message(
            "hadeploy usbmuxd at \(path): \(upstream.map { "the devices of \($0)" } ?? "this machine's USB devices")"
                + "\(routes) and the Wi-Fi devices found over mDNS; Ctrl-C to stop")
        let clock = context.clock
        let waiter = Task {
            var shown: Set<String> = []
            while !Task.isCancelled {
                for line in WiFiMuxer.foundDevices where !shown.contains(line) {
                    shown.insert(line)
                    context.message("  Wi-Fi: \(line)")
                }
                try? await clock.sleep(for: .seconds(1))
            }
        }
        let signals = SignalCancellation { waiter.cancel() }
        await waiter.value
        signals.cancel()
        await hosts?.close()
        unlink(path)
    }
}
