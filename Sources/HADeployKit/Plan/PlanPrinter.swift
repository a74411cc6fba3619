import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers

/// Human and JSON renderings of a plan.
public enum PlanPrinter {
    /// `artifacts`: the builds the plan installs, when they exist already (`--artifact`,
    /// `--artifacts`): each device then shows what the build's provisioning profile says for it.
    public static func text(_ plan: DeployPlan, artifacts: [String: Artifact] = [:], now: Date = .distantPast)
        -> String
    {
        var lines: [String] = []
        lines.append("hadeploy plan — version \(plan.version), deploy id \(plan.deployID)")
        lines.append("Home Assistant: \(plan.server)\(plan.verify ? "" : " (verification skipped)")")
        if !plan.builds.isEmpty {
            lines.append("")
            lines.append("Builds (once per flavour):")
            for build in plan.builds {
                let state: String
                switch (build.enabled, build.location) {
                case (false, _): state = " [--no-build: existing artifact]"
                case (true, .here): state = ""
                case (true, .buildHost(let address)): state = " [built on \(address)]"
                case (true, .nowhere): state = " [cannot be built here: no Xcode, no build_host]"
                }
                lines.append(
                    "  \(build.flavour): \(build.archs.joined(separator: "+")), "
                        + (build.deploymentTarget.isEmpty ? "" : "iOS \(build.deploymentTarget)+, ")
                        + "\(build.sdk), \(build.configuration), Xcode \(build.xcode) → \(build.devices.joined(separator: ", "))\(state)"
                )
            }
        }
        let build = "\(plan.version.marketingVersion) (\(plan.version.buildNumber))"
        for device in plan.devices {
            lines.append("")
            lines.append(
                "\(device.name) [\(device.id)] — "
                    + (Backends.platform(of: device) == .macCatalyst ? "macOS" : "iOS \(device.ios)")
                    + " \(device.arch), \(device.kind.rawValue)")
            lines.append("  flavour:   \(device.flavour)")
            lines.append("  backend:   \(Backends.describe(device.backend))")
            if let udid = device.udid {
                // `${IPAD_PRO_DEVICECTL_ID:-}` unset: the backend line says how it is found.
                let empty = udid.value?.isEmpty == true
                lines.append("  udid:      " + (empty ? "(none set: found when it connects)" : "\(udid)"))
            }
            if let host = device.host { lines.append("  host:      \(host)") }
            lines.append("  version:   \(plan.version)")
            lines.append(
                "  kiosk:     \(device.kiosk.map { $0 ? "yes" : "no" } ?? "(unchanged: the device's own)")")
            lines.append("  dashboard: \(device.dashboard)")
            lines.append("  launch:    \(device.launchArguments)")
            if let artifact = artifacts[device.flavour],
                let profile = ProfileCoverage.summary(device, artifact, now: now)
            {
                lines.append("  profile:   \(profile)")
            }
            if case .notOnThisHost(let reason) = device.availability {
                lines.append("  skipped:   not available on this host (\(reason))")
            }
            if case .failedHere(let reason) = device.availability {
                lines.append("  fails:     \(reason)")
            }
            if !device.unsetKeys.isEmpty {
                lines.append(
                    "  needs:     \(device.unsetKeys.joined(separator: ", ")) (set in .env or the environment)"
                )
            }
            lines.append("  steps:")
            for (index, step) in device.steps.enumerated() {
                let retries =
                    step.retries > 0 ? ", \(step.retries) \(step.retries == 1 ? "retry" : "retries")" : ""
                lines.append(
                    "    \(index + 1). \(step.id.rawValue): \(Backends.summary(of: step.id, for: device, version: build)) (within \(step.deadline)\(retries))"
                )
            }
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
