import ArgumentParser
import DeployModel
import Foundation
import HADeployCore
import HADeployKit
import HADeployStatus

/// Options every command that reads the project shares.
struct ProjectOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The device matrix.", valueName: "path"))
    var config: String = "devices.yaml"

    @Option(
        name: .customLong("env-file"),
        help: ArgumentHelp("Values for templates and ${VARS}.", valueName: "path"))
    var envFile: String = ".env"

    /// devices.yaml and `.env` as these options name them, read through `context`.
    func workspace(_ context: HADeployContext) -> Workspace {
        Workspace(context: context, configPath: config, envFilePath: envFile)
    }
}

/// The options of `deploy` and `plan`.
struct DeployArguments: ParsableArguments {
    @Argument(
        help: ArgumentHelp(
            "Devices, aliases or groups from devices.yaml (`all` for every device).", valueName: "target"))
    var targets: [String] = []

    @Flag(name: .customLong("no-build"), help: "Do not build; use the existing artifact.")
    var noBuild = false

    @Option(
        name: .long,
        help: ArgumentHelp("Open this dashboard (its url_path, e.g. wall-kitchen).", valueName: "name"))
    var dashboard: String?

    @Flag(
        name: .customLong("default"), help: "Open the app's default dashboard (conflicts with --dashboard).")
    var defaultDashboard = false

    @Option(name: .long, help: ArgumentHelp("Home Assistant URL (default: HA_SERVER).", valueName: "url"))
    var server: String?

    @Flag(inversion: .prefixedNo, help: "Kiosk mode on or off (default: each device's setting).")
    var kiosk: Bool?

    @Flag(
        name: .customLong("no-verify"),
        help: "Skip the Home Assistant checks (reported as skipped, never passed).")
    var noVerify = false

    @Flag(name: .long, help: "Reinstall even when the device already has this exact build.")
    var force = false

    @Flag(name: .customLong("allow-shallow"), help: "Accept a shallow clone's (wrong) build number.")
    var allowShallow = false

    /// Refused (with the way on): a token on a command line is visible to every local user in `ps`.
    @Option(name: .long, help: .hidden)
    var token: String?

    @Option(
        name: .customLong("token-file"),
        help: ArgumentHelp(
            "Read the access token from this file (yours, mode 600) instead of HA_TOKEN, for this run.",
            valueName: "file"))
    var tokenFile: String?

    @Flag(
        name: .long,
        help: "Clear the app's server and token (-HAClearCredentials YES) instead of setting them.")
    var reset = false

    @Flag(name: .long, help: "Start the app in demo mode (-HADemoMode YES), no Home Assistant.")
    var demo = false

    @Flag(name: .long, help: "Deploy to virtual devices standing in for the matrix (the built-in demo).")
    var virtual = false

    @Option(name: .long, help: ArgumentHelp("State directory for --virtual devices.", valueName: "dir"))
    var state: String = ".hadeploy/virtual"

    @Flag(
        name: .customLong("wifi-only"),
        help:
            "With --virtual: the twins are Wi-Fi devices only, listed by no usbmuxd and announced over mDNS.")
    var wifiOnly = false

    @Option(name: .long, help: ArgumentHelp("Install this .ipa/.app (with --no-build).", valueName: "path"))
    var artifact: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Install DIR/<flavour>/*.ipa|.app (with --no-build).", valueName: "dir"))
    var artifacts: String?

    func validate() throws {
        if dashboard != nil && defaultDashboard {
            throw ValidationError("--dashboard and --default conflict: choose one dashboard")
        }
        if let dashboard, dashboard.isEmpty {
            throw ValidationError("--dashboard needs a name (or use --default for the app's default)")
        }
        if let server, !(server.hasPrefix("http://") || server.hasPrefix("https://")) {
            throw ValidationError("--server must be an http:// or https:// URL")
        }
        if reset && demo { throw ValidationError("--reset and --demo conflict: choose one") }
        if wifiOnly && !virtual {
            throw ValidationError(
                "--wifi-only is for the virtual twins (with --virtual); real Wi-Fi devices are found by themselves"
            )
        }
        if token != nil {
            throw ValidationError(
                "--token is refused: a token on a command line is visible to every local user (ps); put it "
                    + "in a file of mode 600 and pass --token-file FILE, or set HA_TOKEN")
        }
        if let tokenFile, tokenFile.isEmpty { throw ValidationError("--token-file needs a path") }
        if tokenFile != nil && (reset || demo) {
            throw ValidationError("--token-file sets the app's token; --reset and --demo send none")
        }
        if artifact != nil && artifacts != nil {
            throw ValidationError("--artifact and --artifacts conflict")
        }
        // An empty path is the current folder: never searched for builds by accident.
        if let artifact, artifact.isEmpty {
            throw ValidationError("--artifact needs a path to an .ipa or .app")
        }
        if let artifacts, artifacts.isEmpty { throw ValidationError("--artifacts needs a folder") }
        if (artifact != nil || artifacts != nil) && !noBuild {
            throw ValidationError("--artifact/--artifacts install an existing build: add --no-build")
        }
    }

    func options(screenshots: Bool, token: Secret?) -> DeployOptions {
        var choice = DashboardChoice.unspecified
        if let dashboard { choice = .named(dashboard) } else if defaultDashboard { choice = .appDefault }
        return DeployOptions(
            targets: targets, build: !noBuild, dashboard: choice, server: server, kiosk: kiosk,
            verify: !noVerify, force: force, token: token, reset: reset, demo: demo,
            screenshots: screenshots)
    }

    /// The token `--token-file` names: its first line, from a regular file of this user's that no one
    /// else can read (a token file others can read has leaked already; one they can write, they chose).
    func fileToken(_ context: HADeployContext) throws -> Secret? {
        guard let tokenFile else { return nil }
        let path = context.url(for: tokenFile).path
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try context.fileSystem.attributesOfItem(atPath: path)
        } catch {
            throw ValidationError(
                "--token-file \(tokenFile): cannot be read (\(SystemErrorText.message(error)))")
        }
        let owner = (attributes[.ownerAccountID] as? NSNumber)?.uint32Value
        let mode = ((attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0o777) & 0o777
        guard attributes[.type] as? FileAttributeType == .typeRegular,
            ((attributes[.size] as? NSNumber)?.intValue ?? 0) <= 64 * 1024
        else {
            throw ValidationError(
                "--token-file \(tokenFile): not a token file (a regular file of at most 64 KiB)")
        }
        guard owner == context.system.effectiveUserID else {
            throw ValidationError(
                "--token-file \(tokenFile): belongs to another user; use a file of your own")
        }
        guard mode & 0o077 == 0 else {
            throw ValidationError(
                "--token-file \(tokenFile): other users can read or change it (mode \(String(mode, radix: 8))): "
                    + "chmod 600 it")
        }
        let text = context.fileSystem.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let token =
            text.split(whereSeparator: \.isNewline).first.map {
                $0.trimmingCharacters(in: .whitespaces)
            } ?? ""
        guard !token.isEmpty else { throw ValidationError("--token-file \(tokenFile): it is empty") }
        return Secret(token)
    }
}

/// `--publish` and its topics: `status` and `deploy` publish the devices to Home Assistant through
/// MQTT discovery.
struct PublishOptions: ParsableArguments {
    @Option(
        name: .long, defaultAsFlag: "", parsing: .next,
        help: ArgumentHelp(
            "Publish to Home Assistant through MQTT discovery (the broker: URL, else MQTT_URL).",
            valueName: "url"))
    var publish: String? = nil

    @Option(
        name: .customLong("topic-prefix"),
        help: ArgumentHelp("With --publish: hadeploy's topics (states, availability).", valueName: "prefix"))
    var topicPrefix = "hadeploy"

    @Option(
        name: .customLong("discovery-prefix"),
        help: ArgumentHelp("With --publish: Home Assistant's MQTT discovery prefix.", valueName: "prefix"))
    var discoveryPrefix = "homeassistant"

    func validate() throws {
        if let publish, !publish.isEmpty, !publish.contains("://") {
            throw ValidationError(
                "--publish takes a broker URL (mqtt://host:1883), not \"\(publish)\": name the targets before "
                    + "--publish, or give the URL")
        }
    }

    /// The broker and topics, from --publish or MQTT_URL in `variables`; nil without --publish. A
    /// problem (a bad URL, a wildcard prefix) is returned, not thrown: the caller decides when to say it.
    func publishing(
        variables: [String: String], context: HADeployContext, recordDirectory: URL, deadlineSeconds: Double,
        everySeconds: Int? = nil, commands: Bool = false
    ) -> Result<StatusPublishing, StatusPublishing.Problem>? {
        guard let publish else { return nil }
        if !publish.isEmpty, URLComponents(string: publish)?.password != nil {
            context.message(
                "warning: the broker's password is on the command line, where other users of this machine can "
                    + "read it: put the URL in MQTT_URL (.env) and use --publish alone")
        }
        do throws(StatusPublishing.Problem) {
            return .success(
                try StatusPublishing(
                    url: publish.isEmpty ? nil : publish, discoveryPrefix: discoveryPrefix,
                    topicPrefix: topicPrefix, variables: variables, context: context,
                    recordDirectory: recordDirectory, deadlineSeconds: deadlineSeconds,
                    everySeconds: everySeconds, commands: commands))
        } catch {
            return .failure(error)
        }
    }

    /// Where what was published to a broker is remembered: the project's, or the twins' (`--virtual`).
    static func recordDirectory(context: HADeployContext, virtual: Bool, stateDirectory: URL) -> URL {
        virtual
            ? stateDirectory.appendingPathComponent("twins-published")
            : context.url(for: ".hadeploy/published")
    }
}
