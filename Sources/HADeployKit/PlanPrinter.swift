import DeviceSpec
import Foundation
import HADeployCore

/// Human and JSON renderings of a plan.
public enum PlanPrinter {
    public static func text(_ plan: DeployPlan) -> String {
        var lines: [String] = []
        lines.append("hadeploy plan — version \(plan.version), deploy id \(plan.deployID)")
        lines.append("Home Assistant: \(plan.server)\(plan.verify ? "" : " (verification skipped)")")
        if !plan.builds.isEmpty {
            lines.append("")
            lines.append("Builds (once per flavour):")
            for build in plan.builds {
                let state =
                    !build.enabled
                    ? " [--no-build: existing artifact]" : build.buildHost.map { " [built on \($0)]" } ?? ""
                lines.append(
                    "  \(build.flavour): \(build.archs.joined(separator: "+")), iOS \(build.deploymentTarget)+, "
                        + "\(build.sdk), \(build.configuration), Xcode \(build.xcode) → \(build.devices.joined(separator: ", "))\(state)"
                )
            }
        }
        for device in plan.devices {
            lines.append("")
            lines.append(
                "\(device.name) [\(device.id)] — iOS \(device.ios) \(device.arch), \(device.kind.rawValue)")
            lines.append("  flavour:   \(device.flavour)")
            var transport = device.transport.rawValue
            if let fallback = device.fallbackTransport { transport += " (fallback \(fallback.rawValue))" }
            lines.append("  transport: \(transport)")
            if let udid = device.udid { lines.append("  udid:      \(udid)") }
            if let host = device.host { lines.append("  host:      \(host)") }
            if let usbHost = device.usbHost { lines.append("  usb host:  \(usbHost)") }
            lines.append("  version:   \(plan.version)")
            lines.append("  kiosk:     \(device.kiosk ? "yes" : "no")")
            lines.append("  dashboard: \(device.dashboard ?? "(the app's default)")")
            lines.append("  launch:    \(device.launchArguments)")
            if case .notOnThisHost(let reason) = device.availability {
                lines.append("  skipped:   not available on this host (\(reason))")
            }
            if !device.unsetKeys.isEmpty {
                lines.append(
                    "  needs:     \(device.unsetKeys.joined(separator: ", ")) (set in .env or the environment)"
                )
            }
            lines.append("  steps:")
            for (index, step) in device.steps.enumerated() { lines.append("    \(index + 1). \(step)") }
        }
        for warning in plan.warnings { lines.append("warning: \(warning)") }
        return lines.joined(separator: "\n")
    }

    public static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
