import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployDrivers
import MobileDevice

/// Runs one device's plan: the lock, then exactly the plan's steps in the plan's order, each under
/// its deadline and retry rule. Never throws: every path ends in a `DeviceResult`.
struct DevicePipeline: Sendable {
    var plan: DeployPlan
    var device: DevicePlan
    var environment: DeployEnvironment

    final class Recorder: @unchecked Sendable {
        let lock = NSLock()
        var steps: [StepRecord] = []
        var install: InstallOutcome?
        var verification: Verification = .notRun
        var screenshot: String?
        var crashReports: [String] = []
        var warnings: [String] = []
        var evidence: [LoadEvidence] = []
        /// The device's driver once made: what it notes about a step goes into that step's message.
        var driver: (any DeviceDriver)?
        /// Until when a locked device is waited for (`--wait-unlock`), once it was found locked.
        var unlockDeadline: ContinuousClock.Instant?

        func record(_ step: StepRecord) { lock.withLock { steps.append(step) } }

        /// The driver's note on the step just run, if any.
        func driverNote() async -> String? {
            guard let driver = lock.withLock({ self.driver }) else { return nil }
            return await driver.takeStepNote()
        }
    }

    func run() async -> DeviceResult {
        let start = environment.now()
        let recorder = Recorder()
        func result(_ outcome: DeviceOutcome, reason: String?, failedStep: String? = nil) -> DeviceResult {
            // A device not available here was given no backend of its own: say what it is configured as.
            let transport =
                outcome == .notAvailable ? device.transport.rawValue : device.backend.label
            return DeviceResult(
                id: device.id, name: device.name, ios: device.ios, transport: transport,
                version: plan.version.description, outcome: outcome, reason: reason, failedStep: failedStep,
                install: recorder.install, verification: recorder.verification, steps: recorder.steps,
                screenshot: recorder.screenshot, crashReports: recorder.crashReports,
                seconds: environment.now().timeIntervalSince(start),
                evidence: recorder.evidence.isEmpty ? nil : recorder.evidence)
        }

        if case .notOnThisHost(let reason) = device.availability {
            return result(.notAvailable, reason: reason)
        }
        if case .failedHere(let reason) = device.availability {
            return result(.failed, reason: reason + " — nothing was touched", failedStep: "connect")
        }
        if !device.unsetKeys.isEmpty {
            return result(
                .failed,
                reason: "needs \(device.unsetKeys.joined(separator: ", ")) — set in .env or the environment "
                    + "(nothing was touched)", failedStep: "configure")
        }
        // The secrets the plan names are read from this run's environment: one missing stops the device now.
        let missing = device.secretReferences.filter { $0.resolve(environment.secrets) == nil }
        if !missing.isEmpty {
            return result(
                .failed,
                reason:
                    "needs \(missing.map(\.variable).joined(separator: ", ")) in the environment (the plan "
                    + "names \(missing.map(\.description).joined(separator: ", "))) — nothing was touched",
                failedStep: "configure")
        }
        // Its dashboard is not in Home Assistant (the preflight said why): this device fails, untouched.
        if plan.verify, let verifier = environment.verifier,
            case .some(let expected) = device.dashboard.expected,
            let why = await verifier.refusal(forDashboard: expected)
        {
            return result(
                .failed,
                reason: "Home Assistant preflight: \(why) — nothing was touched. Fix the dashboard in "
                    + "devices.yaml (or --dashboard), or create it in Home Assistant",
                failedStep: "preflight")
        }
        guard let artifact = environment.artifacts[device.flavour] else {
            return result(
                .failed, reason: "no \(device.flavour) build to install (build it, or pass --artifact)",
                failedStep: "build")
        }

        // An iOS .app on the Mac, or the Mac Catalyst bundle on an iPad, fails before anything is touched.
        let wantsMac = Backends.platform(of: device) == .macCatalyst
        if wantsMac != (artifact.platform == .macCatalyst) {
            return result(
                .failed,
                reason: wantsMac
                    ? "\(artifact.path) is an iOS app; the Mac runs the Mac Catalyst build (a flavour with "
                        + "`sdk: maccatalyst`) — nothing was touched"
                    : "\(artifact.path) is the Mac Catalyst app; \(device.name) needs an iOS build of flavour "
                        + "\(device.flavour) — nothing was touched",
                failedStep: "install")
        }

        // An app for a newer iOS than the device's, refused before the device is even reached.
        if let reason = tooOld(iOS: device.ios, artifact: artifact) {
            return result(.failed, reason: reason, failedStep: "install")
        }
        // A profile that does not cover this device: a real one refuses the build after the whole
        // upload (ApplicationVerificationFailed); here nothing is sent.
        if let reason = profileRefusal(artifact) {
            return result(.failed, reason: reason + " — nothing was sent", failedStep: "install")
        }

        let lock: DeviceLock
        do {
            lock = try DeviceLock.acquire(
                device: device.name, key: device.udid?.value ?? device.id,
                directory: environment.lockDirectory)
        } catch {
            return result(.failed, reason: SystemErrorText.message(error), failedStep: "lock")
        }
        defer { lock.release() }

        do {
            try await steps(artifact: artifact, recorder: recorder)
        } catch let failure as StepFailure where failure.hostLimited && recorder.install != nil {
            return result(.installedOnly, reason: failure.reason, failedStep: failure.step)
        } catch let failure as StepFailure where failure.locked && recorder.install != nil {
            // The new app is on the device; iOS would not mount or launch it behind the passcode.
            return result(
                .installedOnly,
                reason: "not launched: locked — \(failure.reason); unlock \(device.name) and run "
                    + "`hadeploy \(device.id) --no-build`",
                failedStep: failure.step)
        } catch let failure as StepFailure where failure.step == StepID.launch.rawValue {
            return result(.failed, reason: guidedAccessNote(failure.reason), failedStep: failure.step)
        } catch let failure as StepFailure {
            return result(.failed, reason: failure.reason, failedStep: failure.step)
        } catch is CancellationError {
            return result(.cancelled, reason: "interrupted")
        } catch {
            return result(.failed, reason: SystemErrorText.message(error))
        }
        if Task.isCancelled { return result(.cancelled, reason: "interrupted") }
        if !device.steps.contains(where: { $0.id == .launch }) {
            return result(
                .installedOnly,
                reason: "not launched: launch: false in devices.yaml (the device keeps its settings)")
        }
        switch recorder.verification {
        case .loaded, .notRun:
            return result(.succeeded, reason: recorder.warnings.first)
        case .skipped(let reason):
            return result(.unverified, reason: reason)
        case .notLoaded(let reason):
            let opened = !reason.contains(LoadEvidenceVerifier.noSession)
            return result(.failed, reason: opened ? reason : guidedAccessNote(reason), failedStep: "verify")
        }
    }

    /// Kiosk mode asks iOS 12.2+ for Guided Access (the app's script says it "can block automatic
    /// launch"): when the app did not open, or opened no session, the reason names it and the fix.
    func guidedAccessNote(_ reason: String) -> String {
        guard device.kiosk == true, Backends.platform(of: device) == .iOS, !device.ios.isEmpty,
            IOSVersion(device.ios) >= IOSVersion("12.2")
        else { return reason }
        return reason + "; kiosk mode asks iOS \(device.ios) for Guided Access, which keeps the app from "
            + "opening while a Guided Access session holds the screen or waits for its passcode: end it on "
            + "\(device.name) (triple-click the side or Home button), or deploy with --no-kiosk"
    }

    /// Why the device refuses `artifact`'s provisioning profile, or nil: a physical iOS device known by
    /// its hardware UDID checks the profile (a jailbroken one, which runs ldid's signature, and
    /// simulators do not).
    func profileRefusal(_ artifact: Artifact, udid known: String? = nil) -> String? {
        ProfileCoverage.refusal(device, artifact, udid: known, now: environment.now())
    }

    /// A device named by its CoreDevice identifier (devicectl) reports its hardware UDID when it
    /// connects: the profile lists that one, so it is checked then, still before the upload.
    func profileRefusalAfterConnect(_ artifact: Artifact, reported: String?) -> String? {
        guard let reported, reported != device.udid?.value,
            !ProvisioningProfile.isHardwareUDID(device.udid?.value ?? "")
        else { return nil }
        return profileRefusal(artifact, udid: reported)
    }

    /// Why `artifact` cannot run on iOS `version` (Info.plist's MinimumOSVersion is newer), or nil.
    func tooOld(iOS version: String, artifact: Artifact) -> String? {
        guard Backends.platform(of: device) == .iOS, artifact.platform == .iOS,
            let minimum = artifact.minimumOSVersion,
            !minimum.isEmpty, !version.isEmpty, version != "0",
            IOSVersion(version) < IOSVersion(minimum)
        else { return nil }
        return "\(artifact.path) needs iOS \(minimum) or later (its MinimumOSVersion); \(device.name) runs "
            + "iOS \(version) — nothing was touched. Build the app with a deployment target of iOS "
            + "\(version) or older for this device's flavour (\(device.flavour))"
    }

    /// Runs one step under its deadline, reporting it; transient errors are retried (after `reprobe`).
    private func step<T: Sendable>(
        _ planned: PlanStep, recorder: Recorder, appBytes: Int64 = 0,
        reprobe: (@Sendable () async throws -> Void)? = nil,
        detail: @escaping @Sendable (T) -> String? = { _ in nil },
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let name = planned.id.rawValue
        let deadline = planned.deadline.duration(appBytes: appBytes)
        let retries = planned.retries
        var attempt = 0
        var waitingForUnlock = false
        while true {
            try Task.checkCancellation()
            if !waitingForUnlock { environment.reporter.handle(.stepStarted(device: device.id, step: name)) }
            let began = environment.now()
            do {
                let value = try await withDeadline(name, deadline, clock: environment.clock, body)
                let seconds = environment.now().timeIntervalSince(began)
                let notes = [detail(value), await recorder.driverNote()].compactMap { $0 }
                let text = notes.isEmpty ? nil : notes.joined(separator: "; ")
                recorder.record(StepRecord(name: name, seconds: seconds, status: .ok, detail: text))
                environment.reporter.handle(
                    .stepFinished(device: device.id, step: name, seconds: seconds, status: .ok, detail: text)
                )
                return value
            } catch {
                let seconds = environment.now().timeIntervalSince(began)
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                // `--wait-unlock`: a device behind its passcode is asked again every few seconds
                // until it is unlocked or the wait is over; said once, not as a failure each time.
                let locked = (error as? any DeviceLockClassifying)?.isDeviceLocked ?? false
                if locked, let wait = environment.waitUnlock {
                    let clock = environment.clock
                    let end = recorder.lock.withLock {
                        if recorder.unlockDeadline == nil {
                            recorder.unlockDeadline = clock.deadline(after: wait)
                        }
                        return recorder.unlockDeadline!
                    }
                    if clock.instant() < end {
                        if !waitingForUnlock {
                            environment.reporter.handle(
                                .message(
                                    "[\(device.id)] \(name): \(redact(SystemErrorText.message(error))) — waiting up to "
                                        + "\(clock.remaining(until: end).formattedSeconds) for it to be unlocked (--wait-unlock)"
                                ))
                        }
                        waitingForUnlock = true
                        try await clock.sleep(for: min(Self.unlockPoll, clock.remaining(until: end)))
                        continue
                    }
                }
                let transient = (error as? any TransientClassifying)?.isTransient ?? false
                let message = redact(
                    [SystemErrorText.message(error), await recorder.driverNote()].compactMap { $0 }.joined(
                        separator: "; "))
                recorder.record(StepRecord(name: name, seconds: seconds, status: .failed, detail: message))
                environment.reporter.handle(
                    .stepFinished(
                        device: device.id, step: name, seconds: seconds, status: .failed, detail: message))
                if transient && attempt < retries {
                    attempt += 1
                    let backoff = Duration.milliseconds(500 * (1 << attempt))
                    environment.reporter.handle(
                        .message(
                            "[\(device.id)] \(name): transient fault, retrying in \(backoff.formattedSeconds)"
                        ))
                    try await environment.clock.sleep(for: backoff)
                    if let reprobe { try await reprobe() }
                    continue
                }
                let limited = (error as? any HostLimitationClassifying)?.isHostLimitation ?? false
                // A reset trust: the way on is hadeploy's own pairing, by the device's name here.
                let repair =
                    (error as? any PairingClassifying)?.isPairingLost == true
                    ? " — pair it again: `hadeploy pair \(device.id)` (over USB, then tap Trust on it)" : ""
                throw StepFailure(
                    step: name, reason: "\(name) failed: \(message)\(repair)", hostLimited: limited,
                    locked: locked)
            }
        }
    }

    /// How often a locked device is asked again under `--wait-unlock`.
    static let unlockPoll: Duration = .seconds(2)

    /// A planned step that does nothing on this run, said as an event with its reason (never silent).
    private func skip(_ planned: PlanStep, reason: String, recorder: Recorder) {
        let name = planned.id.rawValue
        environment.reporter.handle(.stepStarted(device: device.id, step: name))
        recorder.record(StepRecord(name: name, seconds: 0, status: .skipped, detail: reason))
        environment.reporter.handle(
            .stepFinished(device: device.id, step: name, seconds: 0, status: .skipped, detail: reason))
    }

    private func redact(_ text: String) -> String {
        Secret.scrub(
            text, of: device.secretReferences.compactMap { $0.resolve(environment.secrets)?.reveal() })
    }

    /// Runs the plan's steps, in the plan's order, each under the plan's deadline and retry rule.
    private func steps(artifact: Artifact, recorder: Recorder) async throws {
        let driver: any DeviceDriver
        do {
            driver = try environment.driver(device)
        } catch {
            throw StepFailure(step: StepID.connect.rawValue, reason: redact(SystemErrorText.message(error)))
        }
        recorder.lock.withLock { recorder.driver = driver }
        do {
            try await steps(artifact: artifact, recorder: recorder, driver: driver)
        } catch {
            await driver.close()
            throw error
        }
        await driver.close()
    }

    private func steps(artifact: Artifact, recorder: Recorder, driver: any DeviceDriver) async throws {
        let appBytes = DriverDeadlines.size(of: artifact.path, in: environment.fileSystem)
        let deviceID = device.id
        let system = Backends.platform(of: device) == .macCatalyst ? "macOS" : "iOS"
        var waiter: (any LoadedWaiter)?
        var launchedAt: Date?
        var connected: ConnectedDevice?
        var evidence: LoadEvidenceVerifier.Armed?
        var crashes: [URL] = []
        if !plan.verify {
            recorder.verification = .skipped(reason: environment.verificationSkippedReason)
        }
        do {
            for planned in device.steps {
                try Task.checkCancellation()
                switch planned.id {
                case .connect:
                    connected = try await step(
                        planned, recorder: recorder,
                        detail: { [system] in "\($0.name), \(system) \($0.iosVersion)" }
                    ) { try await driver.connect() }
                    // The version the device itself reports, when devices.yaml's is out of date.
                    if let reported = connected?.iosVersion, reported != device.ios,
                        let reason = tooOld(iOS: reported, artifact: artifact)
                    {
                        throw StepFailure(step: "install", reason: reason)
                    }
                    if let reason = profileRefusalAfterConnect(artifact, reported: connected?.udid) {
                        throw StepFailure(step: "install", reason: reason + " — nothing was sent")
                    }
                case .mount:
                    try await step(planned, recorder: recorder) { try await driver.prepare() }
                case .install:
                    let reporter = environment.reporter
                    let began = environment.now()
                    let now = environment.now
                    let force = device.force
                    recorder.install = try await step(
                        planned, recorder: recorder, appBytes: appBytes,
                        reprobe: { _ = try await driver.connect() },
                        detail: { $0 == .unchanged ? "unchanged, skipped" : nil }
                    ) {
                        try await driver.install(artifact, force: force) { progress in
                            let elapsed = max(0.001, now().timeIntervalSince(began))
                            reporter.handle(
                                .progress(
                                    device: deviceID, progress,
                                    bytesPerSecond: Double(progress.bytesDone) / elapsed))
                        }
                    }
                case .subscribe:
                    guard let verifier = environment.verifier else {
                        skip(planned, reason: environment.verificationSkippedReason, recorder: recorder)
                        continue
                    }
                    let deployID = plan.deployID
                    waiter = try await step(planned, recorder: recorder) {
                        try await verifier.expectLoaded(deployID: deployID, device: deviceID)
                    }
                case .launch:
                    // The app's evidence is prepared before the launch: the log's size, the sensor's sentinel.
                    evidence = await prepareEvidence(driver: driver, artifact: artifact, connected: connected)
                    launchedAt = environment.now()
                    // The token is read now, from this run's environment, for the device only.
                    let launch = try ResolvedLaunch(device.launch, environment: environment.secrets)
                    try await step(planned, recorder: recorder) {
                        try await driver.launch(artifact, settings: launch)
                    }
                case .verify:
                    recorder.verification = await verify(
                        planned, driver: driver, artifact: artifact, waiter: waiter, evidence: evidence,
                        launchedAt: launchedAt ?? environment.now(), recorder: recorder)
                    waiter = nil
                case .crashCheck:
                    // A crash report newer than the launch fails the device whatever else was seen.
                    let directory =
                        (environment.reportDirectory?.appendingPathComponent("crashes")
                        ?? environment.crashDirectory
                        ?? environment.fileSystem.temporaryDirectory
                        .appendingPathComponent("hadeploy-crashes-\(UUID().uuidString)"))
                        .appendingPathComponent(PathNames.component(device.id))
                    let since = (launchedAt ?? environment.now()).addingTimeInterval(-2)
                    crashes = try await step(planned, recorder: recorder) {
                        try await driver.crashReports(of: artifact, since: since, into: directory)
                    }
                    recorder.crashReports = crashes.map(\.path)
                case .screenshot:
                    await screenshot(planned, driver: driver, recorder: recorder)
                }
            }
        } catch {
            await waiter?.cancel()
            throw error
        }
        if let first = crashes.first {
            recorder.verification = .notLoaded(
                reason: "the app crashed after launch (crash report: \(first.path))")
        }
    }

    /// Waits for the proof the plan names: the loaded event when the app build sends it, else the
    /// app's own evidence through the verifier.
    private func verify(
        _ planned: PlanStep, driver: any DeviceDriver, artifact: Artifact, waiter: (any LoadedWaiter)?,
        evidence: LoadEvidenceVerifier.Armed?, launchedAt: Date, recorder: Recorder
    ) async -> Verification {
        let timeout = planned.deadline.duration(appBytes: 0)
        environment.reporter.handle(.stepStarted(device: device.id, step: planned.id.rawValue))
        let verification: Verification
        if let evidence {
            let outcome = await evidence.verifier.wait(
                evidence.prepared, launchedAt: launchedAt, event: waiter)
            verification = outcome.verification
            recorder.evidence = outcome.evidence
        } else if let waiter {
            verification = await waiter.wait(timeout: timeout)
        } else {
            verification = .skipped(reason: environment.verificationSkippedReason)
        }
        let seconds = environment.now().timeIntervalSince(launchedAt)
        let (status, detail): (StepStatus, String?) = {
            switch verification {
            case .loaded(let s):
                let proof = recorder.evidence.map(\.rawValue).joined(separator: ", ")
                return (
                    .ok,
                    String(format: "dashboard loaded %.1f s after launch", s)
                        + (proof.isEmpty ? "" : " (\(proof))")
                )
            case .notLoaded(let reason): return (.failed, reason)
            case .skipped(let reason): return (.skipped, reason)
            case .notRun: return (.skipped, nil)
            }
        }()
        recorder.record(
            StepRecord(name: planned.id.rawValue, seconds: seconds, status: status, detail: detail))
        environment.reporter.handle(
            .stepFinished(
                device: device.id, step: planned.id.rawValue, seconds: seconds, status: status, detail: detail
            ))
        return verification
    }

    /// The evidence checks of a device with a verify step (none with --no-verify or without Home Assistant).
    private func prepareEvidence(driver: any DeviceDriver, artifact: Artifact, connected: ConnectedDevice?)
        async
        -> LoadEvidenceVerifier.Armed?
    {
        guard plan.verify, device.step(.verify) != nil, let verifier = environment.verifier else {
            return nil
        }
        let plan = device.verification
        let check = LoadEvidenceVerifier(
            driver: driver, verifier: verifier,
            request: LoadEvidenceVerifier.Request(
                artifact: artifact, dashboard: device.dashboard.expected,
                deviceName: plan.homeAssistantDevice ?? connected?.name ?? device.name,
                homeAssistantIntegration: plan.homeAssistant, appLog: plan.appLog,
                deployID: self.plan.deployID,
                timeout: .checkedSeconds(plan.timeout)),
            clock: environment.clock)
        let prepared = await check.prepare()
        return LoadEvidenceVerifier.Armed(verifier: check, prepared: prepared)
    }

    /// A screenshot is evidence, not the deploy: its absence is a warning.
    private func screenshot(_ planned: PlanStep, driver: any DeviceDriver, recorder: Recorder) async {
        guard let directory = environment.reportDirectory ?? environment.screenshotDirectory else {
            skip(planned, reason: "no --report folder to keep it in", recorder: recorder)
            return
        }
        do {
            let png = try await step(planned, recorder: recorder) { try await driver.screenshot() }
            // The id names the file: the same rule as devices.yaml's, safe even for an id that skipped it.
            let name = PathNames.component(device.id) + ".png"
            let url = directory.appendingPathComponent("screenshots").appendingPathComponent(name)
            try environment.fileSystem.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try environment.fileSystem.write(png, to: url, options: .atomic)
            recorder.screenshot = "screenshots/\(name)"
        } catch let failure as StepFailure {
            recorder.warnings.append("no screenshot: \(failure.reason)")
        } catch {
            recorder.warnings.append("no screenshot: \(SystemErrorText.message(error))")
        }
    }
}
