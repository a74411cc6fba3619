import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import Templating

/// `hadeploy init`: plans the files that adopt hadeploy in an app repository (devices.yaml, the
/// XcodeGen template made from the project's own project.yml, .env.example, .gitignore lines),
/// then writes exactly that plan.
public struct ProjectAdopter: Sendable {
    /// The app repository's root.
    public var root: URL
    /// `.env` merged with the environment, to tell which keys are still unset.
    public var variables: [String: String]
    public var fileSystem: any FileSystem

    public init(root: URL, variables: [String: String], fileSystem: any FileSystem) {
        self.root = root
        self.variables = variables
        self.fileSystem = fileSystem
    }

    static let templatePath = "Templates/project.yml.mustache"
    static let exportOptionsPath = "Templates/ExportOptions.plist.mustache"
    /// What hadeploy writes and must not be committed.
    static let ignored = [".env", "Generated/", ".hadeploy/", "report/"]

    public func plan(seen: [SeenDevice] = [], scanNotes: [String] = []) throws -> AdoptionPlan {
        let specURL = root.appendingPathComponent("project.yml")
        guard let specData = fileSystem.contents(atPath: specURL.path) else {
            throw AdoptionError.noProjectSpec(directory: root.path)
        }
        let template = try XcodeGenTemplateMaker().template(from: String(decoding: specData, as: UTF8.self))
        var files: [AdoptionPlan.PlannedFile] = []
        files.append(
            file(
                "devices.yaml", AdoptedMatrix.devicesYAML,
                summary: "the device matrix: the old scripts' targets, .env keys and dashboards"))
        var templateSummary = "made from project.yml"
        if let bundleID = template.bundleID {
            templateSummary += "; \(bundleID) → {{BUNDLE_ID}} (\(template.bundleIDUses)×)"
        }
        templateSummary += "; DEVELOPMENT_TEAM → {{APPLE_TEAM_ID}} (\(template.teamUses)×)"
        files.append(
            file(
                Self.templatePath, template.text + (template.text.hasSuffix("\n") ? "" : "\n"),
                summary: templateSummary))
        files.append(
            file(
                Self.exportOptionsPath, AdoptedMatrix.exportOptions,
                summary: "export options for `xcodebuild -exportArchive` (Templates/ci/release.yml)"))
        files.append(envExample())
        if let ignore = gitignore() { files.append(ignore) }

        var notes = scanNotes
        let matrix = try SpecLoader(transports: Backends.vocabulary).load(
            yaml: AdoptedMatrix.devicesYAML, file: "devices.yaml")
        for flavour in matrix.flavours where !template.configurations.contains(flavour.configuration) {
            notes.append(
                "flavour \(flavour.name) builds configuration \(flavour.configuration), which project.yml "
                    + "does not define (it has \(template.configurations.joined(separator: ", "))); "
                    + "change `configuration:` in devices.yaml")
        }
        let spec = String(decoding: specData, as: UTF8.self)
        for flavour in matrix.flavours
        where flavour.isMacCatalyst && !spec.contains("macCatalyst") && !spec.contains("SUPPORTS_MACCATALYST")
        {
            notes.append(
                "flavour \(flavour.name) builds the Mac Catalyst app, which project.yml does not enable "
                    + "(supportedDestinations: [iOS, macCatalyst]); add it, or remove the flavour and the "
                    + "`mac` device from devices.yaml")
        }
        for flavour in matrix.flavours {
            if let script = flavour.script, let executable = BuildCommandBuilder.words(script).first,
                !fileSystem.fileExists(atPath: root.appendingPathComponent(executable).path)
            {
                notes.append(
                    "flavour \(flavour.name) runs `\(script)`, which this repository does not have; "
                        + "remove `script:` to build it with xcodebuild")
            }
        }
        return AdoptionPlan(
            files: files, unsetKeys: unsetKeys(matrix), suggestions: Self.suggestions(for: seen),
            notes: notes)
    }

    /// Writes the plan's files; refuses (writing nothing) when one would replace other content and
    /// `force` is not given. Returns the files written.
    @discardableResult
    public func write(_ plan: AdoptionPlan, force: Bool) throws -> [AdoptionPlan.PlannedFile] {
        if !force, !plan.conflicts.isEmpty { throw AdoptionError.wouldOverwrite(plan.conflicts) }
        var written: [AdoptionPlan.PlannedFile] = []
        for file in plan.files where file.action != .unchanged {
            try FileWriter(fileSystem: fileSystem).write(
                Data(file.contents.utf8), to: root.appendingPathComponent(file.path))
            written.append(file)
        }
        return written
    }

    func file(_ path: String, _ contents: String, summary: String) -> AdoptionPlan.PlannedFile {
        let existing = fileSystem.contents(atPath: root.appendingPathComponent(path).path)
        let action: AdoptionPlan.Action =
            existing == nil ? .create : existing == Data(contents.utf8) ? .unchanged : .replace
        return AdoptionPlan.PlannedFile(path: path, contents: contents, action: action, summary: summary)
    }

    /// A new .env.example, or the app's own one with the keys devices.yaml needs added at its end
    /// (its lines and comments are the app's; nothing of them changes).
    func envExample() -> AdoptionPlan.PlannedFile {
        let path = ".env.example"
        guard let data = fileSystem.contents(atPath: root.appendingPathComponent(path).path) else {
            return file(path, AdoptedMatrix.envExample, summary: "the keys to copy into .env")
        }
        let existing = String(decoding: data, as: UTF8.self)
        let present = Set((try? DotEnv(parsing: existing, file: path))?.keys ?? [])
            .union(Self.commentedKeys(existing))
        let missing = AdoptedMatrix.envExample.split(separator: "\n").filter { line in
            guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { return false }
            return !present.contains(String(line[..<equals]))
        }
        guard !missing.isEmpty else {
            return AdoptionPlan.PlannedFile(
                path: path, contents: existing, action: .unchanged, summary: "already has every key")
        }
        var contents = existing
        if !contents.hasSuffix("\n") { contents += "\n" }
        contents += "\n# ── hadeploy (devices.yaml, Templates/) ──\n" + missing.joined(separator: "\n") + "\n"
        return AdoptionPlan.PlannedFile(
            path: path, contents: contents, action: .append,
            summary: "\(missing.count) keys added at the end; the app's own lines kept")
    }

    /// Keys a `.env.example` lists commented out (`# SIM_IPAD_NAME=...`): already documented there.
    static func commentedKeys(_ text: String) -> Set<String> {
        Set(
            text.split(separator: "\n").compactMap { line -> String? in
                let body = line.drop { $0 == "#" || $0 == " " }
                guard body.count < line.count, let equals = body.firstIndex(of: "=") else { return nil }
                let key = body[..<equals]
                return !key.isEmpty && key.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" }
                    ? String(key) : nil
            })
    }

    func gitignore() -> AdoptionPlan.PlannedFile? {
        let path = ".gitignore"
        let existing = fileSystem.contents(atPath: root.appendingPathComponent(path).path)
            .map { String(decoding: $0, as: UTF8.self) }
        let lines = Set(
            (existing ?? "").split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        let missing = Self.ignored.filter { entry in
            !lines.contains(entry) && !lines.contains("/" + entry)
                && !lines.contains(entry.hasSuffix("/") ? String(entry.dropLast()) : entry + "/")
        }
        guard !missing.isEmpty else { return nil }
        var contents = existing ?? ""
        if !contents.isEmpty && !contents.hasSuffix("\n") { contents += "\n" }
        contents += "# hadeploy\n" + missing.joined(separator: "\n") + "\n"
        return AdoptionPlan.PlannedFile(
            path: path, contents: contents, action: existing == nil ? .create : .append,
            summary: "ignores " + missing.joined(separator: " "))
    }

    /// Keys without a default that the matrix or the templates need and nobody sets yet.
    func unsetKeys(_ matrix: DeviceMatrix) -> [String] {
        var needed = ["BUNDLE_ID", "APPLE_TEAM_ID", "HA_SERVER", "HA_TOKEN"]
        func add(_ value: ConfigValue?) {
            guard let value, case .unset(let names) = value.resolve([:]) else { return }
            needed += names
        }
        for device in matrix.devices {
            add(device.udid)
            add(device.host)
            add(device.usbHost)
            if let password = device.ssh?.passwordEnv { needed.append(password) }
        }
        var seen = Set<String>()
        return needed.filter { seen.insert($0).inserted && (variables[$0] ?? "").isEmpty }
    }

    /// `.env` lines for what this host sees, by the old scripts' key names.
    static func suggestions(for seen: [SeenDevice]) -> [String] {
        var taken = Set<String>()
        var lines: [String] = []
        for device in seen {
            guard let key = key(for: device), taken.insert(key).inserted else { continue }
            let what = [device.name, device.os, device.source].compactMap { $0 }.joined(separator: ", ")
            lines.append("\(key)=\(device.udid)    # \(what)")
        }
        return lines
    }

    static func key(for device: SeenDevice) -> String? {
        let type = device.productType ?? ""
        let name = device.name.lowercased()
        switch device.source {
        case "USB", "Wi-Fi":
            if type.hasPrefix("iPad2,") { return "IPAD2_UDID" }
            if ["iPad3,4", "iPad3,5", "iPad3,6"].contains(type) { return "IPAD4_UDID" }
            if ["iPad5,1", "iPad5,2"].contains(type) { return "IPAD_MINI4_UDID" }
            if ["iPad11,1", "iPad11,2"].contains(type) { return "IPAD_MINI5_UDID" }
            if type.hasPrefix("iPhone") { return "IPHONE_UDID" }
        case "devicectl", "pymobiledevice3":
            if name.contains("iphone") { return "IPHONE_DEVICECTL_ID" }
            if name.contains("mini") { return "IPAD_MINI5_DEVICECTL_ID" }
        case "rosettasim":
            if device.os?.hasSuffix(" 9.3") == true { return "SIM_IOS93_UDID" }
            if device.os?.hasSuffix(" 10.3") == true { return "SIM_IOS103_UDID" }
        default:
            break
        }
        return nil
    }

    /// What `hadeploy init` prints: each file and what happened to it, then what to fill in.
    public static func text(_ plan: AdoptionPlan, written: [AdoptionPlan.PlannedFile]?) -> String {
        var lines: [String] = []
        let verbs: [AdoptionPlan.Action: String] =
            written == nil
            ? [
                .create: "would create", .replace: "would replace", .append: "would append to",
                .unchanged: "unchanged",
            ]
            : [.create: "created", .replace: "replaced", .append: "appended to", .unchanged: "unchanged"]
        for file in plan.files {
            let verb = verbs[file.action] ?? file.action.rawValue
            lines.append(
                "\(verb.padding(toLength: 16, withPad: " ", startingAt: 0)) \(file.path) — \(file.summary)")
        }
        if !plan.unsetKeys.isEmpty {
            lines.append("")
            lines.append("Fill in .env (cp .env.example .env): " + plan.unsetKeys.joined(separator: ", "))
        }
        if !plan.suggestions.isEmpty {
            lines.append("")
            lines.append("Seen on this host (add to .env):")
            lines += plan.suggestions.map { "  " + $0 }
        }
        if !plan.notes.isEmpty {
            lines.append("")
            lines += plan.notes.map { "note: " + $0 }
        }
        lines.append("")
        lines.append(
            "Next: hadeploy render && hadeploy plan all   (edit Templates/project.yml.mustache from now on)")
        return lines.joined(separator: "\n")
    }
}
