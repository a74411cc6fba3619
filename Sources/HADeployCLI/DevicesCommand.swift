import ArgumentParser
import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import HADeployStatus
import HADeployVirtual
import Logging

struct DevicesCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Configured and connected devices side by side, with the backend that drives each.",
        discussion: """
            Connected devices come from usbmuxd (USBMUXD_SOCKET_ADDRESS is honoured) and
            are matched to devices.yaml by UDID. Examples:
              hadeploy devices
              hadeploy devices --json
              USBMUXD_SOCKET_ADDRESS=UNIX:$PWD/.hadeploy/virtual/usbmuxd.sock \\
                hadeploy devices
            Wi-Fi-synced devices, which Linux's usbmuxd does not list, are found over
            multicast DNS (_apple-mobdev2._tcp) and shown with their address.
              hadeploy devices --virtual --wifi-only   the twins, as Wi-Fi devices only
            With a build_host in devices.yaml, it also says whether the build host
            answers and which Xcode each flavour finds there (one `xcodebuild -version`
            each; no source is sent).
            """)

    @OptionGroup var project: ProjectOptions

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Flag(name: .long, help: "The virtual twins standing in for the matrix (started for this listing).")
    var virtual = false

    @Flag(
        name: .customLong("wifi-only"),
        help:
            "With --virtual: the twins are Wi-Fi devices only, listed by no usbmuxd and announced over mDNS.")
    var wifiOnly = false

    @Option(name: .long, help: ArgumentHelp("State directory for --virtual devices.", valueName: "dir"))
    var state: String = ".hadeploy/virtual"

    func validate() throws {
        if wifiOnly && !virtual {
            throw ValidationError("--wifi-only is for the virtual twins (with --virtual)")
        }
    }

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        var matrix = try workspace.loadMatrix()
        let (variables, _) = try workspace.loadVariables()
        var topology = Topology.current(environment: context.environment)
        var pairRecords = PairRecordLocation.folder(
            environment: context.environment, fileSystem: context.fileSystem)
        var twins: VirtualTwinsRun?
        var stateLock: StateFolderLock?
        if virtual {
            if wifiOnly { matrix = VirtualMatrix.wifiOnly(matrix) }
            let stateDirectory = context.url(for: state)
            stateLock = try StateFolderLock.acquire(
                stateDirectory, displayName: state, fileSystem: context.fileSystem)
            var logger = Logger(label: "hadeploy.virtual")
            logger.logLevel = context.environment["HADEPLOY_DEBUG"] == nil ? .critical : .debug
            let run = try await VirtualTwinsRun.start(
                matrix: matrix, devices: matrix.devices.filter { !BackendQuestions.hasJailbrokenTwin($0) },
                variables: variables,
                stateDirectory: stateDirectory,
                logger: logger, context: context, wifiOnly: wifiOnly)
            // The twins stand in for the devices: their UDIDs, behind their usbmuxd.
            for index in matrix.devices.indices {
                if let udid = run.twins.udids[matrix.devices[index].id] {
                    matrix.devices[index].udid = ConfigValue(udid)
                }
            }
            topology.virtual = run.twins
            topology.localUsbmuxd = run.twins.address
            pairRecords = stateDirectory.appendingPathComponent("lockdown")
            twins = run
        }
        let inventory = await DeviceInventory.gather(
            matrix: matrix, variables: variables, topology: topology,
            runner: context.runner, fileSystem: context.fileSystem, clock: context.clock,
            pairRecords: pairRecords)
        await twins?.stop()
        withExtendedLifetime(stateLock) {}
        var result = inventory
        if let address = matrix.buildHost.flatMap({ value -> String? in
            if case .value(let text) = value.resolve(variables), !text.isEmpty { return text }
            return nil
        }) {
            result.buildHost = await BuildHostStatus.probe(
                address: address, matrix: matrix, variables: variables, context: context)
        }
        context.print(json ? try PlanPrinter.json(result) : result.text)
        // A usbmuxd that is not running means no USB devices here; one that answers garbage is
        // a broken host, which a script checking the exit code must notice.
        if result.usbmuxdError != nil, let fault = DeviceInventory.usbmuxdFault() {
            context.message("error: \(fault)")
            throw ExitCode(ExitStatus.failure.rawValue)
        }
    }
}
