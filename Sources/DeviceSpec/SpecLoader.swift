import Foundation
import HADeployCore
import Yams

/// Loads and validates devices.yaml into a `DeviceMatrix`, collecting every problem.
public struct SpecLoader: Sendable {
    /// Words that are hadeploy subcommands and so can never name a device, alias or group.
    public static let reservedWords: Set<String> = [
        "deploy", "plan", "version", "render", "devices", "verify", "virtual", "build", "trust-host",
        "help", "init", "rollback",
    ]

    static let topKeys = ["version", "defaults", "flavours", "groups", "devices", "build_host"]
    static let defaultKeys = ["kiosk", "verification_timeout", "dashboard", "ddi_dir", "timeouts"]
    static let flavourKeys = [
        "xcode", "archs", "deployment_target", "sdk", "configuration", "scheme", "settings", "script",
    ]
    static let deviceKeys = [
        "name", "aliases", "kind", "transport", "fallback_transport", "udid", "host", "usb_host",
        "product_type", "ios", "arch", "flavour", "kiosk", "dashboard", "verification_timeout",
        "timeouts", "ssh", "ddi_dir", "simulator_device_type", "simulator_runtime", "app_settings",
        "ha_integration", "ha_device", "loaded_event", "launch", "network", "address", "model", "watchdog",
    ]
    static let sshKeys = ["user", "port", "key", "password_env", "legacy_algorithms", "commands"]
    public static let sshCommandKeys = ["install_dir", "refresh", "launch", "kill", "screenshot"]
    public static let timeoutKeys = [
        "connect", "build", "install", "launch", "verify", "screenshot", "crash_check", "mount",
    ]

    /// The `transport:` words devices.yaml may use: the backends' (HADeployDrivers' `Backends`).
    public var transports: TransportVocabulary

    public init(transports: TransportVocabulary) {
        self.transports = transports
    }

    public func load(contentsOf url: URL, displayName: String? = nil) throws -> DeviceMatrix {
        let name = displayName ?? url.path
        let reader = TextFileReader()
        guard reader.exists(url.path) else {
            throw SpecValidationError(problems: [
                SpecProblem(
                    SourceLocation(file: name, line: 1, column: 1),
                    "file not found; pass --config PATH or create devices.yaml (see README)")
            ])
        }
        let text: String
        do {
            text = try reader.read(url.path, displayName: name)
        } catch let error as TextFileError {
            throw SpecValidationError(problems: [
                SpecProblem(error.location ?? SourceLocation(file: name, line: 1, column: 1), error.reason)
            ])
        }
        return try load(yaml: text, file: name)
    }

    public func load(yaml text: String, file: String) throws -> DeviceMatrix {
        // Before Yams builds the tree: an alias bomb would take minutes there.
        if let bomb = YAMLAliasGuard.check(text) {
            throw SpecValidationError(problems: [
                SpecProblem(SourceLocation(file: file, line: bomb.line, column: bomb.column), bomb.message)
            ])
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw SpecValidationError(problems: [Self.problem(from: error, file: file)])
        }
        let reader = NodeReader(file: file)
        guard let root else {
            reader.problem(nil, "the file is empty; it needs at least `flavours:` and `devices:`")
            throw SpecValidationError(problems: reader.problems)
        }
        let top = reader.entries(root, allowed: Self.topKeys, context: "devices.yaml")
        if let version = top["version"], reader.string(version.value, "version") != "1" {
            reader.problem(version.value, "version must be 1 (the only format this hadeploy knows)")
        }
        let defaults = loadDefaults(top["defaults"]?.value, reader)
        let flavours = loadFlavours(top["flavours"]?.value, reader, rootNode: root)
        let devices = loadDevices(top["devices"]?.value, reader, defaults: defaults, rootNode: root)
        let groups = loadGroups(top["groups"]?.value, reader)
        let buildHost = reader.string(top["build_host"]?.value, "build_host").map(ConfigValue.init)
        if let buildHost, buildHost.references.isEmpty {
            // A variable reference is checked once resolved; a literal must be an SSH address now.
            let components = URLComponents(string: buildHost.raw)
            if components?.scheme != "ssh" || (components?.host ?? "").isEmpty
                || !(1...65535).contains(components?.port ?? 22)
            {
                reader.problem(
                    top["build_host"]?.value,
                    "build_host must be ssh://[user@]host[:port][/work/directory] (a Mac with Xcode), "
                        + "not '\(buildHost.raw)'")
            }
        }
        let matrix = DeviceMatrix(
            file: file, defaults: defaults, flavours: flavours, devices: devices, groups: groups,
            buildHost: buildHost)

        var problems = reader.problems
        problems += SpecValidator(transports: transports).validate(
            matrix, groupNodes: top["groups"]?.value, reader: reader)
        guard problems.isEmpty else { throw SpecValidationError(problems: problems) }
        return matrix
    }

    static func problem(from error: YamlError, file: String) -> SpecProblem {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var message = "YAML syntax error: \(problem)"
            if let context { message += " (\(context.text))" }
            return SpecProblem(SourceLocation(file: file, line: mark.line, column: mark.column), message)
        case .duplicatedKeysInMapping(let duplicates, let context):
            // Yams' own description quotes the whole file as "context"; the mark is what matters.
            let names = duplicates.map { "'\($0)'" }.joined(separator: ", ")
            return SpecProblem(
                SourceLocation(file: file, line: context.mark.line, column: context.mark.column),
                "\(names) appears more than once in the same mapping; remove or rename the duplicate")
        case .reader(let problem, let offset, _, let yaml):
            // Not UTF-8 or a control character; the offset counts Characters of `yaml`.
            var line = 1
            var column = 1
            for character in yaml.prefix(offset ?? 0) {
                if character.isNewline {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            }
            return SpecProblem(
                SourceLocation(file: file, line: line, column: column), "YAML error: \(problem)")
        default:
            return SpecProblem(SourceLocation(file: file, line: 1, column: 1), "YAML error: \(error)")
        }
    }

    /// `watchdog: {after: N, per_hour: M}` (defaults 3 and 3).
    private func watchdog(_ node: Node?, _ reader: NodeReader, context: String) -> Watchdog? {
        guard let node else { return nil }
        let entries = reader.entries(node, allowed: ["after", "per_hour"], context: context)
        return Watchdog(
            after: reader.integer(entries["after"]?.value, "\(context).after", range: 1...100) ?? 3,
            perHour: reader.integer(entries["per_hour"]?.value, "\(context).per_hour", range: 1...60) ?? 3)
    }

    private func timeouts(_ node: Node?, _ reader: NodeReader, context: String) -> [String: Double] {
        guard let node else { return [:] }
        var result: [String: Double] = [:]
        for (name, entry) in reader.entries(node, allowed: Self.timeoutKeys, context: context) {
            if let value = reader.number(entry.value, "\(context).\(name)") { result[name] = value }
        }
        return result
    }

    private func loadDefaults(_ node: Node?, _ reader: NodeReader) -> DeviceDefaults {
        var defaults = DeviceDefaults()
        guard let node else { return defaults }
        let entries = reader.entries(node, allowed: Self.defaultKeys, context: "defaults")
        defaults.kiosk = reader.bool(entries["kiosk"]?.value, "defaults.kiosk")
        if let timeout = reader.number(
            entries["verification_timeout"]?.value, "defaults.verification_timeout")
        {
            defaults.verificationTimeout = timeout
        }
        defaults.dashboard = reader.string(entries["dashboard"]?.value, "defaults.dashboard")
        defaults.ddiDir = reader.string(entries["ddi_dir"]?.value, "defaults.ddi_dir").map(ConfigValue.init)
        defaults.timeouts = timeouts(entries["timeouts"]?.value, reader, context: "defaults.timeouts")
        return defaults
    }

    /// Calls `body` with each entry of the `section` mapping (`flavours:`, `devices:`): its key node,
    /// its name, how problems name it (`device 'ipad2'`) and its settings, unknown keys already
    /// reported. A name names folders and files (products, twin state, screenshots, crash reports), so
    /// it must be a safe one.
    private func forEachEntry(
        _ node: Node?, _ reader: NodeReader, rootNode: Node, section: String, noun: String, allowed: [String],
        examples: String = "",
        _ body: (_ key: Node, _ name: String, _ context: String, _ entries: NodeReader.Entries) -> Void
    ) {
        guard let node else {
            reader.problem(rootNode, "missing `\(section):`\(examples)")
            return
        }
        guard case .mapping(let mapping) = node else {
            reader.problem(node, "\(section) must be a mapping of \(noun) names to settings")
            return
        }
        for (key, value) in mapping {
            guard let name = reader.string(key, "\(noun) name") else { continue }
            let context = "\(noun) '\(name)'"
            if let problem = PathNames.problem(name, what: "\(noun) name") {
                reader.problem(key, problem)
            }
            body(key, name, context, reader.entries(value, allowed: allowed, context: context))
        }
    }

    private func loadFlavours(_ node: Node?, _ reader: NodeReader, rootNode: Node) -> [Flavour] {
        var flavours: [Flavour] = []
        forEachEntry(
            node, reader, rootNode: rootNode, section: "flavours", noun: "flavour", allowed: Self.flavourKeys,
            examples: " (legacy, modern, simulator, ...)"
        ) { key, name, context, entries in
            var archs: [Arch] = []
            if let archNode = entries["archs"]?.value {
                if case .sequence(let items) = archNode {
                    archs = items.compactMap { reader.choice($0, "\(context) arch", as: Arch.self) }
                } else if let single = reader.choice(archNode, "\(context) arch", as: Arch.self) {
                    archs = [single]
                }
            } else {
                reader.problem(key, "\(context) needs `archs:` (e.g. [arm64])")
            }
            let target = reader.string(entries["deployment_target"]?.value, "\(context) deployment_target")
            // The Mac Catalyst build takes the project's own deployment target, as the app's script does.
            let macCatalyst =
                entries["sdk"].flatMap { reader.string($0.value, "\(context) sdk") } == Flavour.macCatalystSDK
            if target == nil && entries["deployment_target"] == nil && !macCatalyst {
                reader.problem(key, "\(context) needs `deployment_target:` (e.g. \"15.0\")")
            } else if let target, !Self.isVersion(target) {
                reader.problem(
                    entries["deployment_target"]?.value,
                    "\(context) deployment_target '\(target)' is not a version like 15.0")
            }
            let script = reader.string(entries["script"]?.value, "\(context) script")
            if let script, script.trimmingCharacters(in: .whitespaces).isEmpty {
                reader.problem(
                    entries["script"]?.value,
                    "\(context) script is empty; name the app's build command (e.g. scripts/build.sh device) "
                        + "or remove `script:` to build with xcodebuild")
            }
            let sdk = reader.string(entries["sdk"]?.value, "\(context) sdk") ?? "iphoneos"
            if !Flavour.sdks.contains(sdk) {
                reader.problem(
                    entries["sdk"]?.value,
                    "\(context) sdk '\(sdk)' is not iphoneos, iphonesimulator or maccatalyst")
            }
            flavours.append(
                Flavour(
                    name: name,
                    xcode: reader.string(entries["xcode"]?.value, "\(context) xcode").map(ConfigValue.init),
                    archs: archs, deploymentTarget: target ?? "",
                    sdk: sdk,
                    configuration: reader.string(entries["configuration"]?.value, "\(context) configuration")
                        ?? "Release",
                    scheme: reader.string(entries["scheme"]?.value, "\(context) scheme"),
                    settings: reader.stringMap(entries["settings"]?.value, "\(context) settings") ?? [:],
                    script: script,
                    location: reader.location(key)))
        }
        return flavours
    }

    private func loadDevices(_ node: Node?, _ reader: NodeReader, defaults: DeviceDefaults, rootNode: Node)
        -> [Device]
    {
        var devices: [Device] = []
        forEachEntry(
            node, reader, rootNode: rootNode, section: "devices", noun: "device", allowed: Self.deviceKeys
        ) { key, id, context, entries in
            func required(_ field: String, _ example: String) -> Node? {
                if let node = entries[field]?.value { return node }
                reader.problem(key, "\(context) needs `\(field):` (e.g. \(example))")
                return nil
            }
            let transport = required("transport", "usb").flatMap {
                reader.word($0, "\(context) transport", in: transports)
            }
            let kind =
                entries["kind"].flatMap { reader.choice($0.value, "\(context) kind", as: DeviceKind.self) }
                ?? transport?.drives ?? .device
            // A Mac has no iOS version to promise: it reports its macOS version when reached.
            let ios =
                transport?.thisMac == true && entries["ios"] == nil
                ? nil
                : required("ios", "\"15.8\"").flatMap { reader.string($0, "\(context) ios") }
            if let ios, !Self.isVersion(ios) {
                reader.problem(entries["ios"]?.value, "\(context) ios '\(ios)' is not a version like 15.8")
            }
            let arch = required("arch", "arm64").flatMap {
                reader.choice($0, "\(context) arch", as: Arch.self)
            }
            let flavour = required("flavour", "modern").flatMap { reader.string($0, "\(context) flavour") }
            let explicitNetwork = reader.bool(entries["network"]?.value, "\(context) network")
            let address = reader.string(entries["address"]?.value, "\(context) address")
            // An address is where a Wi-Fi device is: it means `network: true`.
            let network = explicitNetwork ?? (address != nil)
            if network, let transport, !transport.wifi {
                reader.problem(
                    entries["network"]?.value ?? entries["address"]?.value,
                    "\(context) network: true reaches a device through usbmuxd's network lookup (Wi-Fi sync), "
                        + "which only transports \(transports.listing(\.wifi)) use; transport is '\(transport.word)'"
                )
            }
            if address != nil, explicitNetwork == false {
                reader.problem(
                    entries["address"]?.value,
                    "\(context) address: is where a Wi-Fi device is found, and network: false says it is not "
                        + "reached over Wi-Fi: remove one")
            }
            if let address, address.isEmpty || address.contains("/") || address.contains(" ") {
                reader.problem(
                    entries["address"]?.value,
                    "\(context) address '\(address)' is not a host name or IP address (e.g. 192.168.1.40, ipad.local)"
                )
            }
            let model = reader.string(entries["model"]?.value, "\(context) model")
            if model != nil, let transport, !transport.findsByModel {
                reader.problem(
                    entries["model"]?.value,
                    "\(context) model: finds a device by the model devicectl lists (iPad Pro), which only "
                        + "transport \(transports.listing(\.findsByModel)) uses; transport is '\(transport.word)'"
                )
            }
            if let model, model.trimmingCharacters(in: .whitespaces).isEmpty {
                reader.problem(entries["model"]?.value, "\(context) model is empty (e.g. iPad Pro)")
            }
            var ssh: SSHSettings?
            if let sshNode = entries["ssh"]?.value {
                ssh = loadSSH(sshNode, reader, context: "\(context) ssh")
            }
            let device = Device(
                id: id,
                name: reader.string(entries["name"]?.value, "\(context) name") ?? id,
                aliases: reader.strings(entries["aliases"]?.value, "\(context) aliases") ?? [],
                kind: kind,
                transport: transport?.word ?? "usb",
                fallbackTransport: entries["fallback_transport"].flatMap {
                    reader.word($0.value, "\(context) fallback_transport", in: transports)?.word
                },
                udid: reader.string(entries["udid"]?.value, "\(context) udid").map(ConfigValue.init),
                host: reader.string(entries["host"]?.value, "\(context) host").map(ConfigValue.init),
                usbHost: reader.string(entries["usb_host"]?.value, "\(context) usb_host").map(
                    ConfigValue.init),
                productType: reader.string(entries["product_type"]?.value, "\(context) product_type"),
                iosVersion: ios ?? (transport?.thisMac == true ? "" : "0"),
                arch: arch ?? .arm64,
                flavour: flavour ?? "",
                kiosk: reader.bool(entries["kiosk"]?.value, "\(context) kiosk") ?? defaults.kiosk,
                appSettings: appSettings(
                    entries["app_settings"]?.value, reader, context: "\(context) app_settings"),
                haIntegration: reader.bool(entries["ha_integration"]?.value, "\(context) ha_integration")
                    ?? false,
                haDevice: reader.string(entries["ha_device"]?.value, "\(context) ha_device"),
                loadedEvent: reader.bool(entries["loaded_event"]?.value, "\(context) loaded_event") ?? false,
                launch: reader.bool(entries["launch"]?.value, "\(context) launch") ?? true,
                network: network,
                address: address.map(ConfigValue.init),
                dashboard: reader.string(entries["dashboard"]?.value, "\(context) dashboard")
                    ?? defaults.dashboard,
                verificationTimeout: reader.number(
                    entries["verification_timeout"]?.value, "\(context) verification_timeout")
                    ?? defaults.verificationTimeout,
                timeouts: defaults.timeouts.merging(
                    timeouts(entries["timeouts"]?.value, reader, context: "\(context) timeouts")
                ) { _, device in device },
                ssh: ssh,
                ddiDir: reader.string(entries["ddi_dir"]?.value, "\(context) ddi_dir").map(ConfigValue.init)
                    ?? defaults.ddiDir,
                simulatorDeviceType: reader.string(
                    entries["simulator_device_type"]?.value, "\(context) simulator_device_type"),
                simulatorRuntime: reader.string(
                    entries["simulator_runtime"]?.value, "\(context) simulator_runtime"),
                model: model,
                watchdog: watchdog(entries["watchdog"]?.value, reader, context: "\(context) watchdog"),
                location: reader.location(key))
            devices.append(device)
        }
        return devices
    }

    /// Extra NSUserDefaults keys the app reads at launch (`HAThemeMode: 2`), typed as the app reads
    /// them (`LaunchValue(appKey:text:)`). The keys hadeploy sends itself are refused here: they come
    /// from options and `.env`.
    private func appSettings(_ node: Node?, _ reader: NodeReader, context: String) -> AppSettings {
        guard let node else { return [:] }
        var result = AppSettings()
        for (name, entry) in reader.entries(node, allowed: [], context: context) {
            if Self.managedAppKeys.contains(name) {
                reader.problem(
                    entry.key,
                    "\(context) \(name) is set by hadeploy itself (from options, .env or this file's own fields)"
                )
                continue
            }
            if !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) || name.isEmpty {
                reader.problem(
                    entry.key, "\(context) key '\(name)' is not an NSUserDefaults key like HAThemeMode")
                continue
            }
            guard case .scalar(let scalar) = entry.value else {
                reader.problem(
                    entry.value, "\(context).\(name) must be a single value (YES/NO, a number or text)")
                continue
            }
            // A YAML boolean reads as NSUserDefaults' YES/NO, also for a key the app reads as text.
            let text: String
            switch scalar.string.lowercased() {
            case "true", "yes", "on": text = "YES"
            case "false", "no", "off": text = "NO"
            default: text = scalar.string
            }
            guard let value = LaunchValue(appKey: name, text: text) else {
                reader.problem(
                    entry.value,
                    "\(context).\(name) is read by the app as \(LaunchValue.kind(ofAppKey: name)), not '\(scalar.string)'"
                )
                continue
            }
            result[name] = value
        }
        return result
    }

    /// Launch keys hadeploy derives from its options and fields (REAL-APP.md's table).
    public static let managedAppKeys: Set<String> = [
        "HAServerURL", "HAAccessToken", "HADashboard", "HAKioskMode", "HADemoMode", "HAClearCredentials",
        "HAAutoRegister", "HADeployID", "HADeviceID",
    ]

    private func loadSSH(_ node: Node, _ reader: NodeReader, context: String) -> SSHSettings {
        let entries = reader.entries(node, allowed: Self.sshKeys, context: context)
        var settings = SSHSettings()
        if let user = reader.string(entries["user"]?.value, "\(context) user") { settings.user = user }
        if let port = reader.integer(entries["port"]?.value, "\(context) port", range: 1...65535) {
            settings.port = port
        }
        settings.key = reader.string(entries["key"]?.value, "\(context) key").map(ConfigValue.init)
        settings.passwordEnv = reader.string(entries["password_env"]?.value, "\(context) password_env")
        settings.legacyAlgorithms =
            reader.bool(entries["legacy_algorithms"]?.value, "\(context) legacy_algorithms") ?? false
        if let commands = entries["commands"]?.value {
            for (name, entry) in reader.entries(
                commands, allowed: Self.sshCommandKeys, context: "\(context) commands")
            {
                if let value = reader.string(entry.value, "\(context) commands.\(name)") {
                    settings.commands[name] = value
                }
            }
        }
        return settings
    }

    private func loadGroups(_ node: Node?, _ reader: NodeReader) -> [String: [String]] {
        guard let node else { return [:] }
        var groups: [String: [String]] = [:]
        for (name, entry) in reader.entries(node, allowed: [], context: "groups") {
            groups[name] = reader.strings(entry.value, "group '\(name)'") ?? []
        }
        return groups
    }

    static func isVersion(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return (1...3).contains(parts.count)
            && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }
    }
}
