import Foundation

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
        let app = try await Self.offPool { try AppArtifact.inspect(url) }
        return try await install(app, force: force, progress: progress)
    }

    /// As `install(artifact:force:progress:)`, for an artifact already inspected.
    public func install(
        _ app: AppArtifact, force: Bool = false,
        progress: @escaping @Sendable (USBInstallProgress) -> Void = { _ in }
    ) async throws -> USBInstallOutcome {
        try checkArchitecture(app)
        return try await serialized {
            let started = ContinuousClock.now
            let existing = try await lookupExisting(app.bundleIdentifier)
            if !force, let existing, isUnchanged(app, installed: existing) {
                logger.info(
                    "\(app.bundleIdentifier) \(app.shortVersion ?? "") (\(app.bundleVersion)) unchanged; skipping"
                )
                return .skippedUnchanged
            }
            var attempt = 1
            while true {
                do {
                    try await uploadAndInstall(app, upgrade: existing != nil, progress: progress)
                    break
                } catch let failure as StagedFailure {
                    await removeStaging(StagingUploader.packagePath(for: app))
                    if failure.duringUpload, failure.error.isTransient, attempt == 1 {
                        logger.warning(
                            "upload interrupted (\(failure.error.reason)); re-probing and retrying once")
                        attempt += 1
                        continue
                    }
                    throw failure.finalError(retried: attempt > 1)
                }
            }
            try? records.save(
                InstallRecord(
                    bundleIdentifier: app.bundleIdentifier, shortVersion: app.shortVersion,
                    bundleVersion: app.bundleVersion, contentHash: app.contentHash, installedAt: Date()),
                udid: udid)
            logger.info("installed \(app.bundleIdentifier) in \((ContinuousClock.now - started).secondsText)")
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

    private func lookupExisting(_ bundleID: String) async throws -> USBInstalledApp? {
        let (session, lockdown) = try await openLockdown()
        let proxy = try await InstallationProxy.start(session, lockdown: lockdown, timeouts: timeouts)
        return try await proxy.lookup([bundleID], timeouts: timeouts)[bundleID].flatMap(USBInstalledApp.init)
    }

    private func isUnchanged(_ app: AppArtifact, installed: USBInstalledApp) -> Bool {
        guard installed.bundleVersion == app.bundleVersion, installed.shortVersion == app.shortVersion,
            let record = records.record(udid: udid, bundleIdentifier: app.bundleIdentifier)
        else { return false }
        return record.contentHash == app.contentHash && record.bundleVersion == app.bundleVersion
            && record.shortVersion == app.shortVersion
    }

    private func uploadAndInstall(
        _ app: AppArtifact, upgrade: Bool, progress: @escaping @Sendable (USBInstallProgress) -> Void
    ) async throws {
        var uploaded = false
        do {
            let (session, lockdown) = try await openLockdown()
            let proxy = try await InstallationProxy.start(session, lockdown: lockdown, timeouts: timeouts)
            let descriptor = try await session.startService("com.apple.afc", on: lockdown, timeouts: timeouts)
            let afc = try await session.run("afc_client_new", within: timeouts.request) {
                try AFCClient(device: session.handle, descriptor: descriptor, identity: session.identity)
            }
            let total = Int64(app.uploadSize)
            progress(
                USBInstallProgress(
                    phase: .uploading, bytesDone: 0, bytesTotal: total, percent: 0, status: "Uploading"))
            let uploader = StagingUploader(afc: afc, session: session, timeouts: timeouts) { done in
                let percent = total > 0 ? Int(min(done * 100 / total, 100)) : 100
                progress(
                    USBInstallProgress(
                        phase: .uploading, bytesDone: done, bytesTotal: total, percent: percent,
                        status: "Uploading"))
            }
            let packagePath = try await uploader.upload(app)
            uploaded = true
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

    /// Best effort: a partial package left in PublicStaging wastes space and could be picked up.
    private func removeStaging(_ path: String) async {
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
