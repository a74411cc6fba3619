import DeviceSpec
import HADeployCore
import Versioning

/// Builds the exact commands a flavour's build runs, as values (asserted in tests, shown by `plan`).
public struct BuildCommandBuilder: Sendable {
    public var variables: [String: String]
    public var version: GitVersion
    /// Where derived data, logs and result bundles go.
    public var buildDirectory: String = ".hadeploy/build"
    public var project: String = "HADashboard.xcodeproj"
    public var scheme: String = "HADashboard"
    /// Executables by name, for a non-standard install (or a stand-in in tests).
    public var tools: [String: String] = [:]

    /// The builder with the tool overrides `HADEPLOY_XCODEBUILD` / `HADEPLOY_XCODEGEN` (from `.env` or
    /// the environment) applied: the one place they are read, so the plan shows what runs.
    public static func resolved(variables: [String: String], version: GitVersion) -> BuildCommandBuilder {
        var builder = BuildCommandBuilder(variables: variables, version: version)
        for (tool, key) in [("xcodebuild", "HADEPLOY_XCODEBUILD"), ("xcodegen", "HADEPLOY_XCODEGEN")] {
            if let value = variables[key], !value.isEmpty { builder.tools[tool] = value }
        }
        return builder
    }

    /// `DEVELOPER_DIR` for a flavour's Xcode: `<Xcode.app>/Contents/Developer` (never xcode-select).
    public func developerDirectory(_ flavour: Flavour) -> String? {
        guard let xcode = flavour.xcode?.display(variables) else { return nil }
        return xcode.hasSuffix(".app") ? xcode + "/Contents/Developer" : xcode
    }

    public func xcodegen(_ flavour: Flavour) -> ProcessCommand {
        var environment: [String: String] = [:]
        if let developer = developerDirectory(flavour) { environment["DEVELOPER_DIR"] = developer }
        return ProcessCommand(
            tools["xcodegen"] ?? "xcodegen",
            ["generate", "--spec", "Generated/project.yml", "--project-root", "."],
            environment: environment)
    }

    public func xcodebuild(_ flavour: Flavour) -> ProcessCommand {
        if flavour.isMacCatalyst { return macCatalyst(flavour) }
        let simulator = flavour.sdk == "iphonesimulator"
        var arguments =
            xcodebuildArguments(
                flavour,
                platform: [
                    "-sdk", flavour.sdk,
                    "-destination", simulator ? "generic/platform=iOS Simulator" : "generic/platform=iOS",
                ]) + [
                "ONLY_ACTIVE_ARCH=NO",
                "IPHONEOS_DEPLOYMENT_TARGET=\(flavour.deploymentTarget)",
                "MARKETING_VERSION=\(version.marketingVersion)",
                "CURRENT_PROJECT_VERSION=\(version.buildNumber)",
            ]
        var secrets: Set<String> = []
        if let team = variables["APPLE_TEAM_ID"], !team.isEmpty {
            arguments.append("DEVELOPMENT_TEAM=\(team)")
        }
        if !simulator {
            let signing = automaticSigning()
            arguments += signing.arguments
            secrets = signing.secrets
        } else {
            arguments.append("CODE_SIGNING_ALLOWED=NO")
        }
        return xcodebuildCommand(flavour, arguments, secrets: secrets)
    }

    /// `-allowProvisioningUpdates`, and the App Store Connect API key when it is configured; with
    /// none of its three values set, xcodebuild signs with the Apple ID in Xcode's settings (never
    /// `<unset: …>` as a key). Part of it set is a mistake the build shows: the missing ones as
    /// `<unset: KEY>`.
    func automaticSigning() -> (arguments: [String], secrets: Set<String>) {
        var arguments = ["-allowProvisioningUpdates"]
        var secrets: Set<String> = []
        let key = [
            ("-authenticationKeyPath", "ASC_KEY_PATH"), ("-authenticationKeyID", "ASC_KEY_ID"),
            ("-authenticationKeyIssuerID", "ASC_ISSUER_ID"),
        ]
        if key.contains(where: { !(variables[$0.1] ?? "").isEmpty }) {
            for (flag, key) in key {
                let value = variables[key] ?? ""
                arguments += [flag, value.isEmpty ? "<unset: \(key)>" : value]
                if Secret.isSecretKey(key), !value.isEmpty { secrets.insert(value) }
            }
        }
        return (arguments, secrets)
    }

    /// How every xcodebuild of a flavour starts: the project, scheme and configuration, the
    /// `platform` (SDK, destination), where its files go, and its archs.
    func xcodebuildArguments(_ flavour: Flavour, platform: [String]) -> [String] {
        let directory = "\(buildDirectory)/\(flavour.name)"
        return [
            "build", "-project", project, "-scheme", flavour.scheme ?? scheme, "-configuration",
            flavour.configuration,
        ] + platform + [
            "-derivedDataPath", "\(directory)/DerivedData",
            "-resultBundlePath", "\(directory)/\(flavour.name)-\(version.buildNumber).xcresult",
            "ARCHS=\(flavour.archs.map(\.rawValue).joined(separator: " "))",
        ]
    }

    /// The command: `arguments`, then the flavour's own build settings, with its Xcode's DEVELOPER_DIR.
    func xcodebuildCommand(_ flavour: Flavour, _ arguments: [String], secrets: Set<String> = [])
        -> ProcessCommand
    {
        var environment: [String: String] = [:]
        if let developer = developerDirectory(flavour) { environment["DEVELOPER_DIR"] = developer }
        return ProcessCommand(
            tools["xcodebuild"] ?? "xcodebuild",
            arguments + flavour.settings.sorted(by: { $0.key < $1.key }).map { "\($0.key)=\($0.value)" },
            environment: environment, secretValues: secrets)
    }

    /// The Mac Catalyst build as the app's `scripts/build.sh mac` makes it (1.3): the iOS target's Mac
    /// variant chosen by destination (no `-sdk`, no iOS deployment target), only the active arch, no
    /// debug dylib and no merged binary, and automatic development signing with the team (`Apple
    /// Development`; `-allowProvisioningUpdates` and the App Store Connect key, which the sandboxed
    /// app's entitlements need — keychain access groups).
    func macCatalyst(_ flavour: Flavour) -> ProcessCommand {
        var arguments =
            xcodebuildArguments(flavour, platform: ["-destination", "platform=macOS,variant=Mac Catalyst"])
            + [
                "ONLY_ACTIVE_ARCH=YES",
                "MARKETING_VERSION=\(version.marketingVersion)",
                "CURRENT_PROJECT_VERSION=\(version.buildNumber)",
                "CODE_SIGN_IDENTITY=Apple Development",
                "CODE_SIGN_STYLE=Automatic",
                "ENABLE_DEBUG_DYLIB=NO", "MERGED_BINARY_TYPE=none",
            ]
        if let team = variables["APPLE_TEAM_ID"], !team.isEmpty {
            arguments.append("DEVELOPMENT_TEAM=\(team)")
        }
        let signing = automaticSigning()
        return xcodebuildCommand(flavour, arguments + signing.arguments, secrets: signing.secrets)
    }

    /// What a flavour's build runs, in order: XcodeGen, then xcodebuild or the flavour's own script.
    public func commands(_ flavour: Flavour) -> [ProcessCommand] {
        [xcodegen(flavour), script(flavour) ?? xcodebuild(flavour)]
    }

    /// The app's own build script for a flavour with `script:`. The version goes in the environment
    /// (`MARKETING_VERSION`, `CURRENT_PROJECT_VERSION`) as xcodebuild would get it as settings; the
    /// flavour's Xcode becomes `DEVELOPER_DIR`.
    public func script(_ flavour: Flavour) -> ProcessCommand? {
        guard let script = flavour.script else { return nil }
        let words = Self.words(script)
        guard let executable = words.first else { return nil }
        var environment = [
            "MARKETING_VERSION": version.marketingVersion,
            "CURRENT_PROJECT_VERSION": "\(version.buildNumber)",
            "CONFIGURATION": flavour.configuration,
        ]
        if let developer = developerDirectory(flavour) { environment["DEVELOPER_DIR"] = developer }
        return ProcessCommand(executable, Array(words.dropFirst()), environment: environment)
    }

    /// Splits a `script:` line on spaces, honouring single and double quotes (no shell is involved).
    public static func words(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        var started = false
        for character in line {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "'" || character == "\"" {
                quote = character
                started = true
            } else if character == " " || character == "\t" {
                if started { words.append(current) }
                current = ""
                started = false
            } else {
                current.append(character)
                started = true
            }
        }
        if started { words.append(current) }
        return words
    }
}
