import DeployModel
import Foundation
import HADeployCore

/// The driver's helper (`PyMobileDevice3Helper`): started on the first step that needs
/// pymobiledevice3, kept for the run, stopped by `close`.
///
/// When it cannot start (a pymobiledevice3 without the userspace tunnel API, a broken install, a
/// runner that cannot keep a process running) the steps fall back to one pymobiledevice3 process per
/// step, as before the helper, and the first of them says so: the fallback works with any
/// pymobiledevice3 that has the commands, so a deploy is slower rather than stopped.
extension PyMobileDevice3Driver {
    enum HelperState {
        case untried
        /// Being started (by `warmUp` or a step): every step that needs it waits for this one start.
        case starting(Task<PyMobileDevice3Helper?, any Error>)
        case running(PyMobileDevice3Helper)
        /// Not used for the rest of the run (why, for the record).
        case unavailable(String)
    }

    /// A helper stopped for not answering may be replaced once; then the run goes on without one.
    static let maximumHelperStarts = 2

    /// Starts the helper in the background (from `connect`): Python and pymobiledevice3's imports
    /// take about a second, which the steps before the first that needs it can hide.
    public func warmUp() {
        guard configuration.helper, case .untried = helperState else { return }
        helperState = .starting(Task { try await self.startHelper(step: .mount, replacing: nil) })
    }

    /// The running helper, started when there is none yet; nil when the steps go without one (the
    /// first such step carries the reason).
    func helper(step: StepID) async throws -> PyMobileDevice3Helper? {
        let helper = try await runningHelper(step: step)
        if helper == nil, let note = helperFallbackNote {
            helperFallbackNote = nil
            notes.append(note)
        }
        return helper
    }

    private func runningHelper(step: StepID) async throws -> PyMobileDevice3Helper? {
        guard configuration.helper else { return nil }
        var replacing: String?
        switch helperState {
        case .unavailable: return nil
        case .starting(let task): return try await task.value
        case .running(let helper):
            if helper.session.isRunning { return helper }
            let said = ToolInvoker.lastLines(helper.session.standardErrorTail(), count: 2)
            await helper.stop(grace: .zero)
            replacing = "pymobiledevice3's helper had exited" + (said.isEmpty ? "" : " (\(said))")
        case .untried: break
        }
        let task = Task { [replacing] in try await self.startHelper(step: step, replacing: replacing) }
        helperState = .starting(task)
        return try await task.value
    }

    /// Starts a helper and records the outcome in `helperState`.
    private func startHelper(step: StepID, replacing: String?) async throws -> PyMobileDevice3Helper? {
        guard helperStarts < Self.maximumHelperStarts else {
            return fallBack("it stopped \(helperStarts) times this run")
        }
        let launcher: PyMobileDevice3Launcher
        do {
            launcher = try locateLauncher()
        } catch {
            let reason = (error as? PyMobileDevice3Launcher.Problem)?.reason ?? "\(error)"
            // No pymobiledevice3 at all: each step says what it lacks, as without a helper.
            guard runner.locate(configuration.commands.executable) != nil else {
                helperState = .unavailable(reason)
                return nil
            }
            return fallBack(reason)
        }
        helperStarts += 1
        let command = PyMobileDevice3Helper.command(
            interpreter: launcher.interpreter, udid: configuration.udid,
            environment: configuration.commands.environment)
        do {
            let helper = try await PyMobileDevice3Helper.start(
                command, runner: runner, timeout: configuration.deadlines.limit(step))
            helperState = .running(helper)
            if let replacing { notes.append(replacing + "; a new one was started") }
            return helper
        } catch let broken as PyMobileDevice3Helper.Broken {
            return fallBack(broken.reason)
        } catch {
            helperState = .untried
            throw error
        }
    }

    /// No helper for the rest of the run: said once, in the step that first goes without it.
    private func fallBack(_ reason: String) -> PyMobileDevice3Helper? {
        helperState = .unavailable(reason)
        helperFallbackNote =
            "pymobiledevice3's helper could not start (\(reason)): one pymobiledevice3 process per step "
            + "instead, each building its own tunnel (slower)"
        return nil
    }

    /// One request to the helper under `step`'s deadline. Nil when this pymobiledevice3 lacks what the
    /// request needs: the caller then runs the step's own command. A helper that does not answer in
    /// time, or whose request is given up on, is stopped (a new one may serve the next step).
    func call(
        _ helper: PyMobileDevice3Helper, _ operation: String, _ fields: [String: Any] = [:], step: StepID,
        secrets: Set<String> = []
    ) async throws -> PyMobileDevice3Helper.Reply? {
        let deadline = configuration.deadlines.limit(step)
        do {
            let arguments = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
            let reply = try await helper.request(operation, arguments: arguments, deadline: deadline)
            if let rebuilt = reply.rebuilt { notes.append(Secret.scrub(rebuilt, of: secrets)) }
            return reply
        } catch let refusal as PyMobileDevice3Helper.Refusal {
            if refusal.unsupported {
                helperState = .unavailable(refusal.reason)
                await helper.stop()
                notes.append(
                    "pymobiledevice3's helper cannot \(operation) (\(refusal.reason)): one pymobiledevice3 "
                        + "process per step from here (slower)")
                return nil
            }
            if let rebuilt = refusal.rebuilt { notes.append(Secret.scrub(rebuilt, of: secrets)) }
            throw AppleDriverError(
                .failed, step: step.rawValue, device: configuration.label,
                reason: "pymobiledevice3: \(Secret.scrub(refusal.reason, of: secrets))",
                fix: refusal.timedOut
                    ? "raise `timeouts.\(step.rawValue)` in devices.yaml if the device is slow"
                    : step == .launch
                        ? "run `pymobiledevice3 mounter auto-mount` if the Developer Disk Image is not mounted"
                        : nil)
        } catch let broken as PyMobileDevice3Helper.Broken {
            await helper.stop(grace: .zero)
            helperState = .untried
            throw AppleDriverError(
                .failed, step: step.rawValue, device: configuration.label,
                reason:
                    "pymobiledevice3's helper \(Secret.scrub(broken.reason, of: secrets)) and was stopped",
                fix: broken.timedOut
                    ? "raise `timeouts.\(step.rawValue)` in devices.yaml if the device is slow" : nil)
        } catch {
            // Given up on mid-request (the step's deadline): its answer would come to the next request.
            await helper.stop(grace: .zero)
            helperState = .untried
            throw error
        }
    }

    public func takeStepNote() async -> String? {
        defer { notes = [] }
        return notes.isEmpty ? nil : notes.joined(separator: "; ")
    }

    /// Stops the helper (its stdin closed: it closes the tunnel and exits).
    public func close() async {
        var running: PyMobileDevice3Helper?
        switch helperState {
        case .running(let helper): running = helper
        case .starting(let task): running = try? await task.value
        case .untried, .unavailable: break
        }
        helperState = .unavailable("the run ended")
        await running?.stop()
    }
}
