import DeployModel
import Foundation
import HADeployCore
import HADeployDrivers
import HostCrypto

/// The optional signature of a plan file: HMAC-SHA256, under the key in `HADEPLOY_PLAN_KEY`, of the
/// plan's canonical bytes — the plan as a reader decodes it, encoded again with sorted keys and no
/// `signature` — written as `"signature": "hmac-sha256:<hex>"`. For handing a plan from one CI job to
/// another: the job that runs it, with the same key, runs only a plan the planning job wrote.
public enum PlanSignature {
    /// The environment variable holding the key (its bytes as UTF-8). Never printed.
    public static let keyVariable = "HADEPLOY_PLAN_KEY"
    static let scheme = "hmac-sha256:"

    /// The key `environment` holds, or nil when it is unset or empty.
    public static func key(in environment: [String: String]) -> Data? {
        guard let value = environment[keyVariable], !value.isEmpty else { return nil }
        return Data(value.utf8)
    }

    /// The bytes the signature covers.
    static func canonicalBytes(_ plan: DeployPlan) throws -> Data {
        var plan = plan
        plan.signature = nil
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(plan)
    }

    /// `plan`, signed under `key` as a reader of its file will check it.
    public static func signed(_ plan: DeployPlan, key: Data) throws -> DeployPlan {
        var unsigned = plan
        unsigned.signature = nil
        // What a reader decodes from the file (fields it derives, such as `launchArguments`, are not read).
        let readBack = try JSONDecoder().decode(DeployPlan.self, from: try canonicalBytes(unsigned))
        let code = HMACSHA256.authenticationCode(for: try canonicalBytes(readBack), key: key)
        unsigned.signature = scheme + Hex.lowercase(code)
        return unsigned
    }

    /// Whether `plan` (as read from its file) carries a valid signature under `key`.
    public static func isValid(_ plan: DeployPlan, key: Data) -> Bool {
        guard let signature = plan.signature, signature.hasPrefix(scheme),
            let code = bytes(hex: String(signature.dropFirst(scheme.count))),
            let message = try? canonicalBytes(plan)
        else { return false }
        return HMACSHA256.isValid(code, for: message, key: key)
    }

    /// A plan's JSON as `plan --json` writes it: signed when `environment` has `HADEPLOY_PLAN_KEY`.
    public static func json(_ plan: DeployPlan, environment: [String: String]) throws -> String {
        guard let key = key(in: environment) else { return try PlanPrinter.json(plan) }
        return try PlanPrinter.json(try signed(plan, key: key))
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            result.append(high << 4 | low)
            index += 2
        }
        return result
    }

    static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

/// Reads a plan file for `hadeploy deploy --plan FILE` and holds it to what a plan file may do. A plan
/// file is a program, so beyond its format and (with a checkout here) its project fingerprint:
///
/// - **Tools**: a plan names `pymobiledevice3` and `rosettasim-ctl` by name only (`DeployPlan.fileTools`);
///   this host resolves them at run time as it would for its own plan (`PlanTools`: `PYMOBILEDEVICE3` /
///   `ROSETTASIM_CTL` of the run's environment, `./.venv-pmd3`, PATH). A path is refused unless it is
///   exactly what that resolution gives here. A plan that builds runs only in the checkout it was
///   planned from (its fingerprint checked), and only when its build commands are the ones that
///   checkout plans; a flavour's Xcode must be an `….app/Contents/Developer` folder.
/// - **Secrets**: `env:HA_TOKEN` for the token, `env:*_SSH_PASS` / `env:*_SSH_PASSWORD` for an SSH
///   password; any other key is refused, by name.
/// - **Values**: duplicate devices or UDIDs, deadlines outside what devices.yaml accepts, unknown timeout
///   steps, retries beyond the planner's: refused, every problem at once with its JSON path.
/// - **Folders**: the state folder is the run's (`--state`), and everything the plan keeps under its own
///   state folder (install records, scratch, SSH staging, demo bundles) is moved under it; the home
///   folder is the run's. A state path outside the plan's state folder is refused. Reports go where
///   `--report` says (never the file).
/// - **Signature**: with `HADEPLOY_PLAN_KEY` set, only a plan signed with that key runs
///   (`PlanSignature`); without it, `deploy --plan` refuses an unsigned plan unless `--unsigned` says
///   the user wrote it (`requireSignature`), and a signed plan runs with a note that its signature was
///   not checked.
public struct PlanFileLoader {
    /// The run's environment: the key, and what the tools resolve from.
    public var environment: [String: String]
    public var workingDirectory: URL
    /// The run's state folder (`--state`), absolute.
    public var stateDirectory: URL
    /// The run's home folder.
    public var home: String
    public var fileSystem: any FileSystem
    /// Whether a plan with no signature is refused when no key is set (`deploy --plan` without
    /// `--unsigned`): a plan file decides where the token, SSH logins and device connections go.
    public var requireSignature = false

    public init(
        environment: [String: String], workingDirectory: URL, stateDirectory: URL, home: String,
        fileSystem: any FileSystem
    ) {
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.stateDirectory = stateDirectory
        self.home = home
        self.fileSystem = fileSystem
    }

    /// A plan read from a file, made the run's own, and what the run should say about it.
    public struct Loaded: Sendable {
        public var plan: DeployPlan
        public var notes: [String]
    }

    /// The plan in `data` (the file `path`), or why it does not run. `project`: the fingerprint of the
    /// checkout here, when there is one; `buildCommands`: each flavour's build commands as that
    /// checkout plans them (a plan that builds runs only where they are the file's, and then runs
    /// these, with their secrets, not the file's redacted text).
    public func load(
        _ data: Data, path: String, project: String?, buildCommands: [String: [ProcessCommand]]? = nil
    ) throws -> Loaded {
        var plan = try DeployPlan.load(data, path: path, project: project)
        var notes: [String] = []
        if let key = PlanSignature.key(in: environment) {
            guard plan.signature != nil else {
                throw PlanFileError(
                    path: path,
                    problem:
                        "not signed, and \(PlanSignature.keyVariable) is set: only a plan signed with that "
                        + "key runs here (make it with `hadeploy plan … --json` and the same key set)")
            }
            guard PlanSignature.isValid(plan, key: key) else {
                throw PlanFileError(
                    path: path,
                    problem:
                        "its signature does not match \(PlanSignature.keyVariable): the plan was changed "
                        + "after it was signed, or signed with another key")
            }
            notes.append("\(path): signature checked (\(PlanSignature.keyVariable))")
        } else if requireSignature {
            throw PlanFileError(
                path: path,
                problem:
                    "not signed: a plan file decides where the Home Assistant token, SSH logins and device "
                    + "connections go, so only a signed one runs — set \(PlanSignature.keyVariable) (the same "
                    + "key) where it is made with `hadeploy plan … --json` and where it runs, or pass --unsigned "
                    + "for a plan you wrote yourself")
        } else if plan.signature != nil {
            notes.append(
                "\(path) is signed, but \(PlanSignature.keyVariable) is not set here: its signature was not checked"
            )
        }
        let environment = environment
        let workingDirectory = workingDirectory
        let fileSystem = fileSystem
        var problems = plan.fileProblems(
            backends: Backends(),
            resolveTool: { name in
                PlanTools.resolve(
                    name, environment: environment, workingDirectory: workingDirectory, fileSystem: fileSystem
                )
            }, buildCommands: project == nil ? nil : buildCommands)
        if project != nil, let buildCommands {
            for index in plan.builds.indices where !plan.builds[index].commands.isEmpty {
                plan.builds[index].commands = buildCommands[plan.builds[index].flavour] ?? []
            }
        }
        let (relocated, moved) = plan.relocated(
            stateDirectory: stateDirectory.standardizedFileURL.path, home: home, backends: Backends())
        problems += moved
        guard problems.isEmpty else {
            throw PlanFileError(
                path: path,
                problem:
                    "refused: \(problems.count == 1 ? "1 thing" : "\(problems.count) things") a plan file "
                    + "may not do (README: plan files)\n" + problems.map { "  \($0)" }.joined(separator: "\n")
            )
        }
        return Loaded(plan: relocated, notes: notes)
    }
}
