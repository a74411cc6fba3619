import ArgumentParser
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit

struct PairCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair a device over USB once and turn on its Wi-Fi connections, for runs over Wi-Fi.",
        discussion: """
            Plug the device in and unlock it; tap Trust when it asks. hadeploy pairs as
            Finder does, turns on "Show this iPad when on Wi-Fi" (EnableWifiConnections)
            and keeps the pair record in ~/.local/share/hadeploy/lockdown (macOS:
            ~/Library/Application Support/hadeploy/lockdown; HADEPLOY_PAIR_RECORDS to
            choose) and ~/.pymobiledevice3. From then on `network: true` devices are
            found over Wi-Fi (mDNS) with no cable and no usbmuxd that lists them:
              hadeploy pair mini4
              hadeploy devices
            """)

    @OptionGroup var project: ProjectOptions

    @Argument(help: ArgumentHelp("The device in devices.yaml.", valueName: "device"))
    var device: String

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds to wait for Trust to be tapped (default 120).", valueName: "s"))
    var timeout: Double = 120

    func validate() throws {
        if !(timeout >= 1 && timeout <= 3600) {
            throw ValidationError("--timeout: give seconds from 1 to 3600")
        }
    }

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        let matrix = try workspace.loadMatrix()
        let (variables, _) = try workspace.loadVariables()
        let devices = try TargetResolver(matrix: matrix).resolve([device])
        guard devices.count == 1, let target = devices.first else {
            throw ValidationError("`\(device)` names \(devices.count) devices: pair one device at a time")
        }
        guard BackendQuestions.pairs(target) else {
            throw ValidationError(
                "\(target.id) is reached over \(target.transport.rawValue), not through usbmuxd: nothing to pair"
            )
        }
        if let host = target.usbHost?.resolve(variables).value, !host.isEmpty {
            throw ValidationError(
                "\(target.id) is plugged into \(host): pair it there (`idevicepair pair` on that host)")
        }
        guard let udid = target.udid?.resolve(variables).value, !udid.isEmpty else {
            let unset = target.udid?.resolve(variables).unsetNames ?? []
            throw ValidationError(
                "\(target.id) has no udid"
                    + (unset.isEmpty ? " in devices.yaml" : ": set \(unset.joined(separator: ", ")) in .env")
                    + " (`idevice_id -l` lists the plugged-in devices)")
        }
        let usbmuxd = context.environment["USBMUXD_SOCKET_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        context.message("\(target.id): pairing with \(udid) over USB")
        let outcome = try await DevicePairing.pair(
            udid: udid, usbmuxd: usbmuxd, context: context, trustWait: .seconds(timeout)
        ) { line in context.message("\(target.id): \(line)") }
        let name = outcome.name.map { "\($0) (\(udid))" } ?? udid
        context.print(
            "\(target.id): paired with \(name); Wi-Fi connections \(outcome.wifiConnections ? "on" : "still off")"
                + (outcome.wifiMACAddress.map { ", Wi-Fi MAC \($0)" } ?? ""))
        for path in outcome.kept { context.print("  pair record: \(path)") }
        if !target.network {
            context.print("  devices.yaml: set `network: true` on \(target.id) to deploy to it over Wi-Fi")
        }
        context.print("next: unplug it; `hadeploy devices` finds it on Wi-Fi (mDNS)")
        if !outcome.wifiConnections { throw ExitCode(ExitStatus.failure.rawValue) }
    }
}
