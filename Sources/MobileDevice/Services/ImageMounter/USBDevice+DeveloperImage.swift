import Foundation

extension USBDevice {
    /// Mounts the Developer Disk Image for the device's iOS version unless one is mounted already.
    /// `searchDirectories` defaults to the configured `developerImageDirectories`.
    public func mountDeveloperImageIfNeeded(searchDirectories: [URL]? = nil) async throws
        -> DeveloperImageStatus
    {
        try requireLegacyDeveloperServices(for: "Mounting the Developer Disk Image")
        return try await serialized {
            try await mountDeveloperImage(searchDirectories ?? options.developerImageDirectories)
        }
    }

    func mountDeveloperImage(_ directories: [URL]) async throws -> DeveloperImageStatus {
        let (session, lockdown) = try await openLockdown()
        let descriptor = try await session.startService(
            "com.apple.mobile.mobile_image_mounter", on: lockdown, timeouts: timeouts)
        let mounter = try await session.run("mobile_image_mounter_new", within: timeouts.request) {
            try ImageMounterClient(device: session.handle, descriptor: descriptor, identity: session.identity)
        }
        let mounted = try await session.run("mobile_image_mounter_lookup_image", within: timeouts.request) {
            try mounter.isDeveloperImageMounted()
        }
        if mounted { return .alreadyMounted }
        let version = info.productVersion
        let build = info.buildVersion
        let found: DeveloperImage
        switch DeveloperImageLocator.locate(version: version, build: build, in: directories) {
        case .found(let image):
            found = image
        case .missing(let looked, let unsigned):
            throw DeveloperImageLocator.missingError(
                version: version, build: build, lookedAt: looked, unsignedImages: unsigned, device: identity)
        }
        let signature: Data
        do {
            signature = try Data(contentsOf: found.signature)
        } catch {
            throw MobileDeviceError(
                .hostIO, step: "read \(found.signature.path)", device: identity, reason: "\(error)",
                nextStep: "Check the file's permissions.")
        }
        logger.info("mounting \(found.image.path)")
        // Developer services are offered from now on: the next step asks for them on a new session,
        // as the tools do, not on one opened while the image was missing.
        endSession()
        try await session.run("mount \(found.image.path)", within: timeouts.developerImage) {
            try mounter.uploadAndMount(image: found.image, signature: signature)
        }
        return .mounted(found)
    }

    /// Starts the first of `names` the device offers, through the lockdown session `open` when
    /// given (else a new one). When it refuses them all (InvalidService: no Developer Disk Image),
    /// mounts the image and tries once more on a new session (PROTOCOL.md §6.2), unless
    /// `mountsDeveloperImageOnDemand` is off: then it says the image is not mounted.
    func startDeveloperService(_ names: [String], on open: (DeviceSession, LockdownClient)? = nil)
        async throws -> (DeviceSession, LockdownClient, ServiceDescriptor)
    {
        do {
            return try await startFirstService(names, on: open)
        } catch let error as MobileDeviceError
            where error.kind == .serviceUnavailable && !options.mountsDeveloperImageOnDemand
        {
            var next =
                "Deploy again: its mount step mounts the image for iOS \(info.productVersion) from ddi_dir "
                + "(the device may have restarted since it was mounted)."
            if needsDeveloperMode { next += " If it is mounted: \(Self.developerModeStep)" }
            throw MobileDeviceError(
                .serviceUnavailable, step: error.step, device: identity,
                reason:
                    "the device refuses \(names.joined(separator: " and ")): the Developer Disk Image is not "
                    + "mounted (this step does not mount it)",
                nextStep: next)
        } catch let error as MobileDeviceError where error.kind == .serviceUnavailable {
            logger.info("\(names[0]) unavailable; mounting the Developer Disk Image and retrying")
            let status = try await mountDeveloperImage(options.developerImageDirectories)
            endSession()
            do {
                return try await startFirstService(names)
            } catch let again as MobileDeviceError where again.kind == .serviceUnavailable {
                let next = needsDeveloperMode ? Self.developerModeStep : "Replug the device and retry."
                let mountedText = status == .alreadyMounted ? "is mounted" : "was just mounted"
                throw MobileDeviceError(
                    .serviceUnavailable, step: again.step, device: identity,
                    reason:
                        "the device still refuses \(names.joined(separator: " and ")) although the Developer "
                        + "Disk Image \(mountedText)",
                    nextStep: next)
            }
        }
    }

    /// iOS 16+ refuses developer services with the image mounted while Developer Mode is off.
    private var needsDeveloperMode: Bool {
        info.productVersion.major >= 16 && info.developerModeEnabled != true
    }
    public static let developerModeStep =
        "Turn on Developer Mode: Settings > Privacy & Security > Developer Mode, restart, confirm."

    private func startFirstService(_ names: [String], on open: (DeviceSession, LockdownClient)? = nil)
        async throws -> (DeviceSession, LockdownClient, ServiceDescriptor)
    {
        let (session, lockdown) = try await openLockdown(reusing: open)
        var firstError: MobileDeviceError?
        for name in names {
            do {
                return (
                    session, lockdown, try await session.startService(name, on: lockdown, timeouts: timeouts)
                )
            } catch let error as MobileDeviceError where error.kind == .serviceUnavailable {
                firstError = firstError ?? error
            }
        }
        throw firstError!
    }
}
