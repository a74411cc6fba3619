import Foundation
import HADeployCore

extension USBDevice {
    /// User apps installed on the device.
    public func installedApps() async throws -> [USBInstalledApp] {
        try await serialized {
            let (session, lockdown) = try await openLockdown()
            let proxy = try await InstallationProxy.start(session, lockdown: lockdown, timeouts: timeouts)
            return try await proxy.browse(timeouts: timeouts).compactMap(USBInstalledApp.init)
        }
    }

    /// The installed app with this bundle id, or nil.
    public func installedApp(bundleID: String) async throws -> USBInstalledApp? {
        try await serialized {
            let (session, lockdown) = try await openLockdown()
            let proxy = try await InstallationProxy.start(session, lockdown: lockdown, timeouts: timeouts)
            return try await proxy.lookup([bundleID], timeouts: timeouts)[bundleID].flatMap(
                USBInstalledApp.init)
        }
    }

    /// Installs an `.ipa` or `.app` directory: slices checked against the CPU first, skipped when
    /// the device already has this exact build (unless `force`), streamed over AFC, then installed
    /// or upgraded by installation_proxy. A transient failure during the upload is retried once
    /// after re-probing the device; the partial upload is always removed, so a failure never leaves
    /// a half-installed app.
    public func install(
        artifact url: URL, force: Bool = false,
        progress: @escaping @Sendable (USBInstallProgress) -> Void = { _ in }
    ) async throws -> USBInstallOutcome {
        let started = options.clock.instant()
        // The content hash is computed only when it decides something (see installPrepared).
        let app = try await Self.offPool { try AppArtifact.inspect(url, hashing: false, in: self.fileSystem) }
        logger.debug(
            "inspected \(url.lastPathComponent) in \(options.clock.elapsed(since: started).secondsText)")
        return try await installPrepared(app, force: force, progress: progress)
    }

    /// As `install(artifact:force:progress:)`, for an artifact already inspected.
    public func install(
        _ app: AppArtifact, force: Bool = false,
        progress: @escaping @Sendable (USBInstallProgress) -> Void = { _ in }
    ) async throws -> USBInstallOutcome {
        try await installPrepared(app, force: force, progress: progress)
    }

    private func installPrepared(
        _ app: AppArtifact, force: Bool, progress: @escaping @Sendable (USBInstallProgress) -> Void
    ) async throws -> USBInstallOutcome {
        try checkArchitecture(app)
        let clock = options.clock
        return try await serialized {
            let started = clock.instant()
            // The device's lockdown session (kept from the previous step) for the lookup and the
            // first upload attempt; installation_proxy and AFC are both started before the upload.
            let (session, proxy, afcService) = try await startInstallServices()
            let existing = try await proxy.lookup([app.bundleIdentifier], timeouts: timeouts)[
                app.bundleIdentifier
            ]
            .flatMap(USBInstalledApp.init)
            var hash = app.contentHash.isEmpty ? nil : app.contentHash
            let record = records.record(udid: udid, bundleIdentifier: app.bundleIdentifier)
            if !force, let existing, let record, sameVersions(app, existing, record) {
                if hash == nil, let fingerprint = app.fingerprint, record.fingerprint == fingerprint {
                    hash = record.contentHash
                }
                if hash == nil {
                    hash = try await ContentHashMemo.shared.hash(of: app, in: fileSystem)
                }
                if hash == record.contentHash {
                    logger.info(
                        "\(app.bundleIdentifier) \(app.shortVersion ?? "") (\(app.bundleVersion)) unchanged; skipping"
                    )
                    return .skippedUnchanged
                }
            }
            // Not needed before the upload: hash while the bytes travel (USB, not the CPU, is the limit).
            let known = hash
            let hashing = Task.detached { () throws -> String in
                if let known { return known }
                return try await ContentHashMemo.shared.hash(of: app, in: self.fileSystem)
            }
            var reuse: InstallServices? = (session, proxy, afcService)
            var attempt = 1
            while true {
                do {
                    try await uploadAndInstall(
                        app, upgrade: existing != nil, reuse: reuse, progress: progress)
                    break
                } catch let failure as StagedFailure {
                    reuse = nil
                    // The cleanup and the retry start over on a new connection.
                    endSession()
                    if let staged = try? StagingUploader.packagePath(for: app) { await removeStaging(staged) }
                    if failure.duringUpload, failure.error.isTransient, attempt == 1,
                        options.retriesInterruptedUpload
                    {
                        logger.warning(
                            "upload interrupted (\(failure.error.reason)); re-probing and retrying once")
                        attempt += 1
                        continue
                    }
                    hashing.cancel()
                    throw failure.finalError(retried: attempt > 1)
                }
            }
            if let contentHash = try? await hashing.value {
                try? records.save(
                    InstallRecord(
                        bundleIdentifier: app.bundleIdentifier, shortVersion: app.shortVersion,
                        bundleVersion: app.bundleVersion, contentHash: contentHash,
                        fingerprint: app.fingerprint,
                        installedAt: options.clock.now()),
                    udid: udid)
            }
            logger.info("installed \(app.bundleIdentifier) in \(clock.elapsed(since: started).secondsText)")
            return .installed
        }
    }

    /// Removes an app; an app that is not installed is not an error.
    public func uninstall(bundleID: String) async throws -> USBUninstallOutcome {
        try await serialized {
            let (session, lockdown) = try await openLockdown()
            let proxy = try await InstallationProxy.start(session, lockdown: lockdown, timeouts: timeouts)
            records.remove(udid: udid, bundleIdentifier: bundleID)
            guard try await proxy.lookup([bundleID], timeouts: timeouts)[bundleID] != nil else {
                return .wasNotInstalled
            }
            try await proxy.uninstall(bundleID, timeouts: timeouts)
            return .removed
        }
    }

    // MARK: steps

    func checkArchitecture(_ app: AppArtifact) throws {
        let cpu = info.cpuArchitecture
        guard !cpu.isEmpty else { return }
        guard
            !ArchitectureCompatibility.canRun(
                slices: app.architectures, deviceArchitecture: cpu, iOSMajor: info.productVersion.major)
        else { return }
        let runnable = ArchitectureCompatibility.runnableSlices(
            deviceArchitecture: cpu, iOSMajor: info.productVersion.major)
        var next = "Build with ARCHS including \(runnable.first ?? cpu)"
        if runnable.contains("armv7") && !runnable.contains("arm64") {
            next += " (armv7 needs Xcode 13.x: Xcode 14 dropped it; pick it with DEVELOPER_DIR)"
        }
        throw MobileDeviceError(
            .architectureMismatch, step: "check \(app.url.lastPathComponent) slices", device: identity,
            reason:
                "the app contains only \(app.architectures.joined(separator: ", ")) but this \(cpu) device on iOS "
                + "\(info.productVersion) runs \(runnable.joined(separator: ", ")); nothing was uploaded",
            nextStep: next + ", then rebuild.")
    }

    private func sameVersions(_ app: AppArtifact, _ installed: USBInstalledApp, _ record: InstallRecord)
        -> Bool
    {
        installed.bundleVersion == app.bundleVersion && installed.shortVersion == app.shortVersion
            && record.bundleVersion == app.bundleVersion && record.shortVersion == app.shortVersion
    }

    private func reuseOrStart(_ reuse: InstallServices?) async throws -> InstallServices {
        if let reuse { return reuse }
        return try await startInstallServices()
    }

    typealias InstallServices = (DeviceSession, InstallationProxy, ServiceDescriptor)

    /// installation_proxy connected and AFC started on the device's lockdown session.
    private func startInstallServices() async throws -> InstallServices {
        let (session, lockdown) = try await openLockdown()
        let proxy = try await InstallationProxy.start(session, lockdown: lockdown, timeouts: timeouts)
        let afc = try await session.startService("com.apple.afc", on: lockdown, timeouts: timeouts)
        return (session, proxy, afc)
    }

    private func uploadAndInstall(
        _ app: AppArtifact, upgrade: Bool, reuse: InstallServices?,
        progress: @escaping @Sendable (USBInstallProgress) -> Void
    ) async throws {
        var uploaded = false
        do {
            let (session, proxy, descriptor) = try await reuseOrStart(reuse)
            let afc = try await session.run("afc_client_new", within: timeouts.request) {
                try AFCClient(device: session.handle, descriptor: descriptor, identity: session.identity)
            }
            let total = Int64(app.uploadSize)
            progress(
                USBInstallProgress(
                    phase: .uploading, bytesDone: 0, bytesTotal: total, percent: 0, status: "Uploading"))
            let uploader = StagingUploader(
                afc: afc, session: session, timeouts: timeouts, fileSystem: fileSystem
            ) { done in
                let percent = total > 0 ? Int(min(done * 100 / total, 100)) : 100
                progress(
                    USBInstallProgress(
                        phase: .uploading, bytesDone: done, bytesTotal: total, percent: percent,
                        status: "Uploading"))
            }
            let clock = self.options.clock
            let uploadStarted = clock.instant()
            let packagePath = try await uploader.upload(app)
            uploaded = true
            logger.debug("uploaded \(total) bytes in \(clock.elapsed(since: uploadStarted).secondsText)")
            var options: [String: PlistValue] = [:]
            switch app.kind {
            case .ipa: options["CFBundleIdentifier"] = .string(app.bundleIdentifier)
            case .appDirectory: options["PackageType"] = .string("Developer")
            }
            try await proxy.install(
                packagePath: packagePath, options: options, upgrade: upgrade, timeouts: timeouts
            ) {
                status, percent in
                progress(
                    USBInstallProgress(
                        phase: .installing, bytesDone: total, bytesTotal: total,
                        percent: status == "Complete" ? 100 : (percent ?? 0), status: status))
            }
        } catch let error as MobileDeviceError {
            throw StagedFailure(error: error.on(identity), duringUpload: !uploaded)
        }
    }

    /// The cleanup's own budget: it runs after a failure or Ctrl-C, when nobody wants to wait long.
    static let stagingCleanupDeadline: Duration = .seconds(10)

    /// Best effort: a partial package left in PublicStaging wastes space and could be picked up.
    /// Shielded from cancellation (after Ctrl-C the install's task is cancelled, and a cancelled
    /// cleanup would leave megabytes behind), bounded by its own short deadline instead.
    private func removeStaging(_ path: String) async {
        let clock = options.clock
        let cleanup = Task.detached { [self] () -> Bool in
            let finished = try? await clock.withDeadline(Self.stagingCleanupDeadline) {
                await self.removeStagingNow(path)
                return true
            }
            return finished == true
        }
        if await !cleanup.value {
            logger.warning(
                "could not remove the partial upload \(path) within \(Self.stagingCleanupDeadline.secondsText)"
            )
        }
    }

    private func removeStagingNow(_ path: String) async {
        var timeouts = self.timeouts
        timeouts.handshake = min(timeouts.handshake, Self.stagingCleanupDeadline)
        timeouts.request = min(timeouts.request, Self.stagingCleanupDeadline)
        do {
            let (session, lockdown) = try await openLockdown()
            let descriptor = try await session.startService("com.apple.afc", on: lockdown, timeouts: timeouts)
            try await session.run("afc_remove_path_and_contents \(path)", within: timeouts.request) {
                let afc = try AFCClient(
                    device: session.handle, descriptor: descriptor, identity: session.identity)
                try afc.removeTree(path)
            }
        } catch {
            logger.warning("could not remove the partial upload \(path): \(error)")
        }
    }

    /// Runs blocking host work (hashing, unzipping) off the cooperative pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try body() })
            }
        }
    }
}

/// A failure during upload or install, with whether the upload had finished.
struct StagedFailure: Error {
    let error: MobileDeviceError
    let duringUpload: Bool

    func finalError(retried: Bool) -> MobileDeviceError {
        var reason = error.reason
        if retried { reason += "; it was retried once after reconnecting and failed again" }
        if duringUpload || error.kind != .deadlineExceeded {
            reason += "; the partial upload was removed and nothing was installed"
        } else {
            reason +=
                "; the device may still finish the install: check with `ideviceinstaller -l` before retrying"
        }
        return MobileDeviceError(
            error.kind, step: error.step, device: error.device, reason: reason, nextStep: error.nextStep,
            isTransient: error.isTransient)
    }
}
