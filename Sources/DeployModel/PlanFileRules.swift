import DeviceSpec
import Foundation
import HADeployCore

/// One thing a plan file may not do, at the JSON path that does it (`devices[1].steps[0].retries`).
public struct PlanFileProblem: Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var problem: String

    public init(_ path: String, _ problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String { "\(path): \(problem)" }
}

/// What a plan read from a file may do (`hadeploy deploy --plan FILE`). A plan file is a program —
/// it names tools, folders and secrets — so whoever can write one could otherwise run anything as the
/// deploying user, write anywhere and send any variable of the environment to a server it names.
/// A plan made in the same run never passes through these rules: it comes from devices.yaml.
///
/// - Tools: only the names the planner writes (`tools`), resolved on this host at run time as the
///   planner would resolve them; never a path from the file (a path is accepted only when it is exactly
///   what that resolution gives here). A plan file builds only in the checkout it was planned from:
///   its build commands must be exactly the ones this checkout plans for those flavours (`buildCommands`,
///   compared as the file shows them, secrets as `***`), and the run executes this checkout's (with
///   the secrets); without a checkout here a plan that builds is refused. A flavour's Xcode
///   (`DEVELOPER_DIR` for xcrun) must be an `….app/Contents/Developer` folder.
/// - Secrets: the token only as `env:HA_TOKEN`, an SSH password only as a key named like the ones
///   devices.yaml's `password_env:` uses (`*_SSH_PASS`, `*_SSH_PASSWORD`); any other key is refused.
/// - Values: what devices.yaml refuses is refused here too — two devices with the same name or UDID,
///   deadlines outside `DeadlineLimits`, timeouts for steps devices.yaml does not know — and retries
///   beyond what the planner writes (`PlanStep.maximumRetries`).
/// - Folders: the state folder and everything under it (install records, scratch, the SSH staging, demo
///   bundles) and the home folder are the run's own (`relocated`), not the file's.
extension DeployPlan {
    /// The executables a plan file may name, each the bare name the planner writes.
    public static let fileTools: Set<String> = ["pymobiledevice3", "rosettasim-ctl"]

    /// The variable holding the token (`--token` is handed on as it).
    public static let tokenVariable = "HA_TOKEN"

    /// Whether `variable` is named like an SSH password key of devices.yaml (`password_env:
    /// IPAD2_SSH_PASS`, or the `_PASSWORD` spelling the loader also accepts).
    public static func isSSHPasswordVariable(_ variable: String) -> Bool {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
        guard variable.allSatisfy(allowed.contains) else { return false }
        for suffix in ["_SSH_PASS", "_SSH_PASSWORD"] where variable.hasSuffix(suffix) {
            return variable.count > suffix.count
        }
        return false
    }

    /// Every rule this plan breaks as a plan file, all at once. `resolveTool` gives the path a tool
    /// name resolves to on this host at run time (as the drivers will run it). `buildCommands`: each
    /// flavour's build commands as the checkout here plans them (nil: no checkout here).
    public func fileProblems(
        backends: any BackendCatalog, resolveTool: @escaping (String) -> String,
        buildCommands: [String: [ProcessCommand]]? = nil
    ) -> [PlanFileProblem] {
        var problems: [PlanFileProblem] = []
        func token(_ reference: SecretReference?, at path: String) {
            guard let reference, reference.variable != Self.tokenVariable else { return }
            problems.append(
                PlanFileProblem(
                    path,
                    "the token may only be \(SecretReference(environment: Self.tokenVariable)); "
                        + "\(reference.variable) is not a key a plan file may read"))
        }
        func deadline(_ seconds: Double, at path: String) {
            guard !DeadlineLimits.accepts(seconds) else { return }
            problems.append(
                PlanFileProblem(
                    path,
                    "\(StepDeadline.format(seconds)) s is not a deadline: devices.yaml accepts "
                        + "\(DeadlineLimits.shortestSeconds) s to \(Int(DeadlineLimits.longestSeconds)) s (a week)"
                ))
        }

        token(accessToken, at: "accessToken")
        if let login = usbHostLogin?.login {
            var fields = PlanFileFields(.check(resolveTool: resolveTool), path: "usbHostLogin")
            fields.sshLogin(login, "login")
            problems += fields.problems
        }
        for (index, build) in builds.enumerated() where !build.commands.isEmpty {
            guard let buildCommands else {
                problems.append(
                    PlanFileProblem(
                        "builds[\(index)].commands",
                        "this plan builds, and a plan file builds only in the checkout it was planned from "
                            + "(there is no devices.yaml here): run it there, or plan with --no-build and "
                            + "--artifact PATH or --artifacts DIR"))
                continue
            }
            let expected = (buildCommands[build.flavour] ?? []).map(PlannedCommandText.init)
            let given = build.commands.map(PlannedCommandText.init)
            if expected != given {
                let first =
                    zip(given, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                    ?? min(given.count, expected.count)
                problems.append(
                    PlanFileProblem(
                        "builds[\(index)].commands[\(first)]",
                        "not the build this checkout plans for flavour \(build.flavour) (the file's commands "
                            + "would run here\(PlannedCommandText.difference(given, expected, at: first))): "
                            + "make the plan again in this checkout"))
            }
        }

        var ids: [String: Int] = [:]
        var udids: [String: Int] = [:]
        for (index, device) in devices.enumerated() {
            let at = "devices[\(index)]"
            let id = device.id.lowercased()
            // An id names report files and lock keys: a plain name, as devices.yaml's keys are.
            if device.id.isEmpty || device.id.hasPrefix(".") || device.id.contains("/")
                || device.id.contains("\\") || device.id.unicodeScalars.contains(where: { $0.value < 0x20 })
            {
                problems.append(
                    PlanFileProblem(
                        "\(at).id", "'\(device.id)' is not a device id (a plain name, as in devices.yaml)"))
            }
            if device.steps.isEmpty && device.availability == .available {
                problems.append(
                    PlanFileProblem(
                        "\(at).steps", "no steps: a device's plan connects, installs and launches at least"))
            }
            var seenSteps: [String: Int] = [:]
            for (number, step) in device.steps.enumerated() {
                if let first = seenSteps["\(step.id)"] {
                    problems.append(
                        PlanFileProblem(
                            "\(at).steps[\(number)]", "step '\(step.id)' is already steps[\(first)]"))
                } else {
                    seenSteps["\(step.id)"] = number
                }
            }
            if let first = ids[id] {
                problems.append(
                    PlanFileProblem("\(at).id", "device '\(device.id)' is already devices[\(first)]"))
            } else {
                ids[id] = index
            }
            if let udid = device.udid?.value, !udid.isEmpty {
                if let first = udids[udid] {
                    problems.append(
                        PlanFileProblem(
                            "\(at).udid", "UDID \(udid) is already devices[\(first)]'s (\(devices[first].id))"
                        ))
                } else {
                    udids[udid] = index
                }
            }
            if case .homeAssistant(_, let reference) = device.launch.credentials {
                token(reference, at: "\(at).launch.credentials.homeAssistant.token")
            }
            for (step, seconds) in device.timeouts.sorted(by: { $0.key < $1.key }) {
                if !SpecLoader.timeoutKeys.contains(step) {
                    problems.append(
                        PlanFileProblem(
                            "\(at).timeouts.\(step)",
                            "no step '\(step)' (devices.yaml's timeouts: "
                                + "\(SpecLoader.timeoutKeys.joined(separator: ", ")))"))
                }
                deadline(seconds, at: "\(at).timeouts.\(step)")
            }
            deadline(device.verification.timeout, at: "\(at).verification.timeout")
            for (number, step) in device.steps.enumerated() {
                let path = "\(at).steps[\(number)]"
                if !(0...PlanStep.maximumRetries).contains(step.retries) {
                    problems.append(
                        PlanFileProblem(
                            "\(path).retries",
                            "\(step.retries) retries: a step is retried 0 to \(PlanStep.maximumRetries) times"
                        ))
                }
                switch step.deadline {
                case .seconds(let seconds):
                    deadline(seconds, at: "\(path).deadline")
                case .sizedToApp(let base, let rate):
                    deadline(base, at: "\(path).deadline")
                    if !(rate.isFinite && rate >= 1) {
                        problems.append(
                            PlanFileProblem("\(path).deadline", "the app's rate must be positive"))
                    }
                }
            }
            var fields = PlanFileFields(.check(resolveTool: resolveTool), path: "\(at).backend.settings")
            var backend = device.backend
            backends.visitSettings(of: &backend, &fields)
            problems += fields.problems
        }
        return problems
    }

    /// This plan with its folders the run's own: `stateDirectory` replaces the file's state folder in
    /// every path under it, and `home` the home folder of the Mac and the simulators. A state path not
    /// under the file's state folder is a problem (the run would write where the file says).
    public func relocated(stateDirectory: String, home: String, backends: any BackendCatalog) -> (
        DeployPlan, [PlanFileProblem]
    ) {
        var plan = self
        var problems: [PlanFileProblem] = []
        let old = self.stateDirectory
        func move(_ path: String, at jsonPath: String) -> String {
            if path == old { return stateDirectory }
            let rest = path.hasPrefix(old + "/") ? String(path.dropFirst(old.count + 1)) : nil
            let parts = rest?.split(separator: "/", omittingEmptySubsequences: false) ?? []
            guard let rest, !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
                problems.append(
                    PlanFileProblem(
                        jsonPath,
                        "'\(path)' is not under the plan's state folder (\(old)): a plan file writes only under "
                            + "the run's own state folder"))
                return path
            }
            return stateDirectory + "/" + rest
        }
        plan.stateDirectory = stateDirectory
        for index in plan.devices.indices {
            var fields = PlanFileFields(
                .relocate(move: move, home: home), path: "devices[\(index)].backend.settings")
            backends.visitSettings(of: &plan.devices[index].backend, &fields)
            problems += fields.problems
        }
        if case .demo(let directory, let bundleID) = artifacts {
            plan.artifacts = .demo(
                directory: move(directory, at: "artifacts.demo.directory"), bundleID: bundleID)
        }
        return (plan, problems)
    }
}

/// A build command as a plan file shows it (secrets as `***`): what a file's command is compared by.
struct PlannedCommandText: Equatable {
    var executable: String
    var arguments: [String]
    var environment: [String: String]
    var workingDirectory: String?

    init(_ command: ProcessCommand) {
        executable = command.executable
        arguments = command.redactedArguments
        environment = command.redactedEnvironment
        workingDirectory = command.workingDirectory
    }

    /// Where the file's command `index` parts from this checkout's, in the redacted words the plan shows:
    /// so the refusal says what changed (a version, a folder, a variable) instead of leaving it to a diff.
    static func difference(_ given: [Self], _ expected: [Self], at index: Int) -> String {
        guard index < given.count, index < expected.count else {
            return "; the file has \(given.count) commands, this checkout plans \(expected.count)"
        }
        let file = given[index]
        let here = expected[index]
        if file.executable != here.executable {
            return "; it runs \(file.executable), this checkout \(here.executable)"
        }
        if file.workingDirectory != here.workingDirectory {
            return "; it runs in \(file.workingDirectory ?? "the current folder"), this checkout in "
                + "\(here.workingDirectory ?? "the current folder")"
        }
        if let at = zip(file.arguments, here.arguments).enumerated().first(where: {
            $0.element.0 != $0.element.1
        }) {
            return "; argument \(at.offset + 1) is '\(at.element.0)' there, '\(at.element.1)' here"
        }
        if file.arguments.count != here.arguments.count {
            return "; it has \(file.arguments.count) arguments, this checkout's has \(here.arguments.count)"
        }
        for key in Set(file.environment.keys).union(here.environment.keys).sorted()
        where file.environment[key] != here.environment[key] {
            return
                "; \(key) is '\(file.environment[key] ?? "unset")' there, '\(here.environment[key] ?? "unset")' here"
        }
        return ""
    }
}
