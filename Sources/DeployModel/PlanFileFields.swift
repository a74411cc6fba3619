import HADeployCore

/// A backend's configuration as the plan-file rules see it: each field a plan file may not choose
/// freely, named once by the configuration itself (`visit`), then checked or moved by the rules.
public protocol PlanFileChecked {
    /// Hands every checked field to `fields`, by its JSON key.
    mutating func visit(_ fields: inout PlanFileFields)
}

/// Reads and rewrites a backend's checked fields for the plan-file rules (`DeployPlan.fileProblems`,
/// `DeployPlan.relocated`): tools by name only, Xcode folders, SSH password keys, ports, and the
/// folders that are the run's own (under the state folder, the home folder).
public struct PlanFileFields {
    enum Mode {
        case check(resolveTool: (String) -> String)
        case relocate(move: (String, String) -> String, home: String)
    }

    let mode: Mode
    /// The JSON path of the value visited (`devices[0].backend.settings`).
    var path: String
    public internal(set) var problems: [PlanFileProblem] = []

    init(_ mode: Mode, path: String) {
        self.mode = mode
        self.path = path
    }

    func at(_ key: String) -> String { "\(path).\(key)" }

    /// A folder under the state folder: the run's own state folder replaces the file's.
    public mutating func statePath(_ value: inout String, _ key: String) {
        if case .relocate(let move, _) = mode { value = move(value, at(key)) }
    }

    /// The user's home folder: the run's own.
    public mutating func home(_ value: inout String, _ key: String) {
        if case .relocate(_, let home) = mode { value = home }
    }

    /// A tool the plan names by `name` only, resolved on this host at run time.
    public mutating func tool(_ value: String?, named name: String, _ key: String) {
        guard case .check(let resolveTool) = mode, let value, value != name else { return }
        let resolved = resolveTool(name)
        if value == resolved { return }
        problems.append(
            PlanFileProblem(
                at(key),
                "'\(value)' is not a tool a plan file may name: it names \(name) by name only, resolved on "
                    + "this host (here: \(resolved)); make the plan again with this hadeploy"))
    }

    /// An Xcode's developer folder (`DEVELOPER_DIR` for xcrun).
    public mutating func developerDirectory(_ value: String?, _ key: String) {
        guard case .check = mode, let value else { return }
        let parts = value.split(separator: "/", omittingEmptySubsequences: false)
        if !value.hasPrefix("/") || parts.contains("..") || parts.contains(".")
            || !value.hasSuffix(".app/Contents/Developer")
        {
            problems.append(
                PlanFileProblem(
                    at(key), "'\(value)' is not an Xcode's developer folder (/…/Xcode.app/Contents/Developer)"
                ))
        }
    }

    /// An SSH login: a password only from a key named like devices.yaml's `password_env:` ones.
    public mutating func sshLogin(_ login: SSHLoginPlan, _ key: String) {
        guard case .check = mode, case .password(let reference) = login,
            !DeployPlan.isSSHPasswordVariable(reference.variable)
        else { return }
        problems.append(
            PlanFileProblem(
                at(key) + ".password._0",
                "an SSH password may only be a *_SSH_PASS or *_SSH_PASSWORD key (devices.yaml's "
                    + "password_env:); \(reference.variable) is not a key a plan file may read"))
    }

    /// A TCP port.
    public mutating func port(_ value: Int, _ key: String) {
        guard case .check = mode, !(1...65535).contains(value) else { return }
        problems.append(PlanFileProblem(at(key), "\(value) is not a port (1...65535)"))
    }

    /// A nested value with checked fields of its own.
    public mutating func nested<T: PlanFileChecked>(_ value: inout T?, _ key: String) {
        guard var inner = value else { return }
        let outer = path
        path = at(key)
        inner.visit(&self)
        path = outer
        value = inner
    }

    /// A nested value with checked fields of its own.
    public mutating func nested<T: PlanFileChecked>(_ value: inout T, _ key: String) {
        var optional: T? = value
        nested(&optional, key)
        if let optional { value = optional }
    }
}

/// The backends a run knows, as the plan-file rules need them: each device's settings visited by the
/// backend that reads them (HADeployDrivers' `Backends`).
public protocol BackendCatalog: Sendable {
    /// Visits `backend`'s settings with `fields` (and writes back what it moved); a problem when no
    /// backend has that name or its settings are not that backend's.
    func visitSettings(of backend: inout PlannedBackend, _ fields: inout PlanFileFields)
}

extension PlanFileFields {
    /// A problem with the settings as a whole (`kind` unknown, settings unreadable).
    public mutating func refuse(_ key: String, _ problem: String) {
        problems.append(PlanFileProblem(key.isEmpty ? path : at(key), problem))
    }

    /// Visits `value` (decoded from `settings` as `T`), then writes it back.
    public mutating func visit<T: PlanFileChecked & Codable>(_ type: T.Type, in settings: inout PlanValue) {
        do {
            var value = try settings.decode(type)
            value.visit(&self)
            settings = try PlanValue(encoding: value)
        } catch {
            refuse("", "not this backend's settings: \(error)")
        }
    }
}
