import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit

struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Configured and connected devices side by side, with the backend that drives each.",
        discussion: """
            Connected devices come from usbmuxd (USBMUXD_SOCKET_ADDRESS is honoured) and are matched to
            devices.yaml by UDID. Examples:
              hadeploy devices
              hadeploy devices --json
              USBMUXD_SOCKET_ADDRESS=UNIX:$PWD/.hadeploy/virtual/usbmuxd.sock hadeploy devices
            """)

    @OptionGroup var project: ProjectOptions

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() async throws {
        try await withContext { context in
            let workspace = Workspace(
                context: context, configPath: project.config, envFilePath: project.envFile)
            let matrix = try workspace.loadMatrix()
            let (variables, _) = try workspace.loadVariables()
            let inventory = await DeviceInventory.gather(
                matrix: matrix, variables: variables, host: .current,
                usbmuxdAddress: context.environment["USBMUXD_SOCKET_ADDRESS"])
            context.print(json ? try PlanPrinter.json(inventory) : inventory.text)
        }
    }
}
