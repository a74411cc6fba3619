import DeviceSpec
import Foundation
import HADeployCore

/// The steps for one device: lock → connect → prepare → install → launch → wait for the loaded
/// event → crash check → screenshot. Never throws: every path ends in a `DeviceResult`.
struct DevicePipeline: Sendable {
    var plan: DeployPlan
    var device: DevicePlan
    var environment: DeployEnvironment

    /// Default deadlines in seconds; devices.yaml `timeouts:` overrides them per device.
    static let defaultTimeouts: [String: Double] = [
        "connect": 30, "mount": 120, "install": 120, "launch": 60, "crash_check": 30, "screenshot": 30,
    ]

    final class Recorder: @unchecked Sendable {
        let lock = NSLock()
        var steps: [StepRecord] = []
        var install: InstallOutcome?
        var verification: Verification = .notRun
        var screenshot: String?
        var crashReports: [String] = []
        var warnings: [String] = []
        var evidence: [LoadEvidence] = []

        func record(_ step: StepRecord) { lock.withLock { steps.append(step) } }
    }

    func run() async -> DeviceResult {
        let start = environment.now()
        let recorder = Recorder()
        func result(_ outcome: DeviceOutcome, reason: String?, failedStep: String? = nil) -> DeviceResult {
            DeviceResult(
                id: device.id, name: device.name, ios: device.ios, transport: device.transport.rawValue,
                version: plan.version.description, outcome: outcome, reason: reason, failedStep: failedStep,
                install: recorder.install, verification: recorder.verification, steps: recorder.steps,
                screenshot: recorder.screenshot, crashReports: recorder.crashReports,
                seconds: environment.now().timeIntervalSince(start),
                evidence: recorder.evidence.isEmpty ? nil : recorder.evidence)
        }

        if case .notOnThisHost(let reason) = device.availability {
            return result(.notAvailable, reason: reason)
        }
        if !device.unsetKeys.isEmpty {
            return result(
                .failed,
                reason: "needs \(device.unsetKeys.joined(separator: ", ")) — set in .env or the environment "
                    + "(nothing was touched)", failedStep: "configure")
        }
        guard let artifact = environment.artifacts[device.flavour] else {
            return result(
                .failed, reason: "no \(device.flavour) build to install (build it, or pass --artifact)",
                failedStep: "build")
        }

        let lock: DeviceLock
        do {
            lock = try DeviceLock.acquire(
                device: device.name, key: device.udid ?? device.id, directory: environment.lockDirectory)
        } catch {
            return result(.failed, reason: "\(error)", failedStep: "lock")
        }
        defer { lock.release() }

        do {
            try await steps(artifact: artifact, recorder: recorder)
        } catch let failure as StepFailure where failure.hostLimited && recorder.install != nil {
            return result(.installedOnly, reason: failure.reason, failedStep: failure.step)
        } catch let failure as StepFailure {
            return result(.failed, reason: failure.reason, failedStep: failure.step)
        } catch is CancellationError {
            return result(.cancelled, reason: "interrupted")
        } catch {
            return result(.failed, reason: "\(error)")
        }
        if Task.isCancelled { return result(.cancelled, reason: "interrupted") }
        switch recorder.verification {
        case .loaded, .notRun:
            return result(.succeeded, reason: recorder.warnings.first)
        case .skipped(let reason):
            return result(.unverified, reason: reason)
        case .notLoaded(let reason):
            return result(.failed, reason: reason, failedStep: "verify")
        }
    }

    private func limit(_ step: String, default value: Double? = nil) -> Duration {
        let seconds = device.timeouts[step] ?? value ?? Self.defaultTimeouts[step] ?? 60
        return .milliseconds(Int64(seconds * 1000))
    }

    /// Runs one step under its deadline, reporting it; transient errors are retried (after `reprobe`).
    private func step<T: Sendable>(
        _ name: String, recorder: Recorder, deadline: Duration, retries: Int = 0,
        reprobe: (@Sendable () async throws -> Void)? = nil,
        detail: @escaping @Sendable (T) -> String? = { _ in nil },
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        var attempt = 0
        while true {
            try Task.checkCancellation()
            environment.reporter.handle(.stepStarted(device: device.id, step: name))
            let began = environment.now()
            do {
                let value = try await withDeadline(name, deadline, body)
                let seconds = environment.now().timeIntervalSince(began)
                let text = detail(value)
                recorder.record(StepRecord(name: name, seconds: seconds, status: "ok", detail: text))
                environment.reporter.handle(
                    .stepFinished(device: device.id, step: name, seconds: seconds, status: "ok", detail: text)
                )
                return value
            } catch {
                let seconds = environment.now().timeIntervalSince(began)
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                let transient = (error as? any TransientClassifying)?.isTransient ?? false
                let message = redact("\(error)")
                recorder.record(StepRecord(name: name, seconds: seconds, status: "failed", detail: message))
                environment.reporter.handle(
                    .stepFinished(
                        device: device.id, step: name, seconds: seconds, status: "failed", detail: message))
                if transient && attempt < retries {
                    attempt += 1
                    let backoff = Duration.milliseconds(500 * (1 << attempt))
                    environment.reporter.handle(
                        .message(
                            "[\(device.id)] \(name): transient fault, retrying in \(backoff.formattedSeconds)"
                        ))
                    try await Task.sleep(for: backoff)
                    if let reprobe { try await reprobe() }
                    continue
                }
                let limited = (error as? any HostLimitationClassifying)?.isHostLimitation ?? false
                throw StepFailure(step: name, reason: "\(name) failed: \(message)", hostLimited: limited)
            }
        }
    }

    private func redact(_ text: String) -> String {
        var result = text
        for secret in device.launchArguments.secretValues {
            result = result.replacingOccurrences(of: secret, with: "***")
        }
        return result
    }

    private func steps(artifact: Artifact, recorder: Recorder) async throws {
        let driver: any DeviceDriver
        do {
            driver = try environment.driver(device)
        } catch {
            throw StepFailure(step: "connect", reason: redact("\(error)"))
        }
        let connected = try await step(
            "connect", recorder: recorder, deadline: limit("connect"), retries: 2,
            detail: { "\($0.name), iOS \($0.iosVersion)" }
        ) { try await driver.connect() }

        try await step("mount", recorder: recorder, deadline: limit("mount"), retries: 1) {
            try await driver.prepare()
        }

        let size = Self.size(of: URL(fileURLWithPath: artifact.path))
        // Sized to the app: a minute plus the upload at a pessimistic 4 MB/s.
        let installDefault = 60 + Double(size) / 4_000_000
        let reporter = environment.reporter
        let deviceID = device.id
        let began = environment.now()
        let now = environment.now
        let force = environment.force
        let outcome = try await step(
            "install", recorder: recorder, deadline: limit("install", default: installDefault), retries: 1,
            reprobe: { _ = try await driver.connect() },
            detail: { $0 == .unchanged ? "unchanged, skipped" : nil }
        ) {
            try await driver.install(artifact, force: force) { progress in
                let elapsed = max(0.001, now().timeIntervalSince(began))
                reporter.handle(
                    .progress(
                        device: deviceID, progress, bytesPerSecond: Double(progress.bytesDone) / elapsed))
            }
        }
        recorder.install = outcome

        var waiter: (any LoadedWaiter)?
        var evidence: (check: LoadEvidenceVerifier, prepared: LoadEvidenceVerifier.Prepared)?
        if plan.verify, let verifier = environment.verifier {
            let deployID = plan.deployID
            // The event only from app builds that fire it: the planner sends -HADeployID to those.
            if device.launchArguments.items.contains(where: { $0.flag == "-HADeployID" }) {
                waiter = try await step("subscribe", recorder: recorder, deadline: .seconds(20)) {
                    try await verifier.expectLoaded(deployID: deployID, device: deviceID)
                }
            }
            let check = LoadEvidenceVerifier(
                driver: driver, verifier: verifier,
                request: LoadEvidenceVerifier.Request(
                    artifact: artifact, dashboard: device.dashboard, deviceName: connected.name,
                    homeAssistantIntegration: device.launchArguments.items.contains {
                        $0.flag == "-HAAutoRegister" && $0.value == "YES"
                    }, deployID: deployID,
                    timeout: .milliseconds(Int64(device.verificationTimeout * 1000))))
            let prepared = try await step("evidence", recorder: recorder, deadline: .seconds(30)) {
                await check.prepare()
            }
            evidence = (check, prepared)
        } else {
            recorder.verification = .skipped(
                reason: plan.verify
                    ? environment.verificationSkippedReason : "verification skipped (--no-verify)")
        }

        let launchedAt = environment.now()
        let arguments = device.launchArguments.revealed()
        let secrets = device.launchArguments.secretValues
        do {
            try await step("launch", recorder: recorder, deadline: limit("launch"), retries: 1) {
                try await driver.launch(artifact, arguments: arguments, secrets: secrets)
            }
        } catch {
            await waiter?.cancel()
            throw error
        }

        if let evidence {
            environment.reporter.handle(.stepStarted(device: device.id, step: "verify"))
            let outcome = await evidence.check.wait(evidence.prepared, launchedAt: launchedAt, event: waiter)
            let verification = outcome.verification
            recorder.verification = verification
            recorder.evidence = outcome.evidence
            let seconds = environment.now().timeIntervalSince(launchedAt)
            let proof = outcome.evidence.map(\.rawValue).joined(separator: ", ")
            let (status, detail): (String, String?) = {
                switch verification {
                case .loaded(let s):
                    return ("ok", String(format: "dashboard loaded %.1f s after launch (", s) + proof + ")")
                case .notLoaded(let reason): return ("failed", reason)
                case .skipped(let reason): return ("skipped", reason)
                case .notRun: return ("skipped", nil)
                }
            }()
            recorder.record(StepRecord(name: "verify", seconds: seconds, status: status, detail: detail))
            environment.reporter.handle(
                .stepFinished(
                    device: device.id, step: "verify", seconds: seconds, status: status, detail: detail))
        }

        // Crash check: a crash report newer than the launch fails the device whatever the event said.
        let crashDirectory =
            (environment.reportDirectory
            ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("hadeploy-\(plan.deployID)"))
            .appendingPathComponent("crashes").appendingPathComponent(device.id)
        let crashes = try await step("crash_check", recorder: recorder, deadline: limit("crash_check")) {
            try await driver.crashReports(
                of: artifact, since: launchedAt.addingTimeInterval(-2), into: crashDirectory)
        }
        recorder.crashReports = crashes.map(\.path)

        if let directory = environment.reportDirectory {
            do {
                let png = try await step("screenshot", recorder: recorder, deadline: limit("screenshot")) {
                    try await driver.screenshot()
                }
                let url = directory.appendingPathComponent("screenshots").appendingPathComponent(
                    "\(device.id).png")
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try png.write(to: url, options: .atomic)
                recorder.screenshot = "screenshots/\(device.id).png"
            } catch let failure as StepFailure {
                // A screenshot is evidence, not the deploy: its absence is a warning.
                recorder.warnings.append("no screenshot: \(failure.reason)")
            }
        }

        if let first = crashes.first {
            let reason = "the app crashed after launch (crash report: \(first.path))"
            recorder.verification = .notLoaded(reason: reason)
        }
    }

    static func size(of url: URL) -> Int64 {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { return 0 }
        if !isDirectory.boolValue {
            return (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int64) ?? 0
        }
        var total: Int64 = 0
        if let enumerator = FileManager.default.enumerator(
            at: url, includingPropertiesForKeys: [.fileSizeKey])
        {
            for case let file as URL in enumerator {
                total += Int64((try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
            }
        }
        return total
    }
}
