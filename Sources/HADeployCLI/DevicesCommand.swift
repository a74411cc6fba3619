import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit
import HADeployStatus

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
            With a build_host in devices.yaml, it also says whether the build host
            answers and which Xcode each flavour finds there (one `xcodebuild -version`
            each; no source is sent).
            """)

    @OptionGroup var project: ProjectOptions

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        let matrix = try workspace.loadMatrix()
        let (variables, _) = try workspace.loadVariables()
        let inventory = await DeviceInventory.gather(
            matrix: matrix, variables: variables, topology: .current(environment: context.environment),
            runner: context.runner, fileSystem: context.fileSystem, clock: context.clock)
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
