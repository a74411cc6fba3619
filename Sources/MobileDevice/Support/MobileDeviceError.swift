/// A failure talking to a device through usbmuxd, phrased for the person at the keyboard:
/// what failed (the step, usually the C call), on which device, why, and what to do next.
public struct MobileDeviceError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; callers branch on it (retry, re-probe, report).
    public enum Kind: Sendable, Equatable {
        /// usbmuxd does not list the device.
        case notConnected
        /// usbmuxd itself could not be reached.
        case usbmuxdUnavailable
        /// The "Trust this computer?" dialog is waiting on the device.
        case trustPending
        /// The device has a passcode and is locked.
        case passcodeLocked
        /// The user tapped "Don't Trust".
        case pairingDenied
        /// The device no longer accepts this computer's pair record.
        case pairingInvalid
        /// A step did not finish before its deadline (the C call may still be running, abandoned).
        case deadlineExceeded
        /// The connection dropped or broke mid-step; trying again may work.
        case connectionLost
        /// The device refused to start a service (for developer services: no Developer Disk Image).
        case serviceUnavailable
        /// No Developer Disk Image for this iOS version in any directory searched.
        case developerImageMissing
        /// The device refused to mount the Developer Disk Image.
        case developerImageMountFailed
        /// The iOS version needs a newer stack than libimobiledevice 1.3.0 for this capability.
        case unsupportedOnThisIOS
        /// The app's executable has no slice the device's CPU can run.
        case architectureMismatch
        /// The artifact is not a readable `.ipa` or `.app`.
        case invalidArtifact
        /// installation_proxy reported an error (its name is in the reason).
        case installFailed
        /// The app is not installed on the device.
        case appNotInstalled
        /// debugserver refused or failed the launch.
        case launchFailed
        /// The device answered something the protocol does not allow.
        case protocolError
        /// A file on this computer could not be read or written.
        case hostIO
        /// The operation was cancelled by the caller.
        case cancelled
    }

    public let kind: Kind
    /// The step that failed, e.g. `afc_file_write` or `lockdownd_client_new_with_handshake`.
    public let step: String
    public let device: DeviceIdentity?
    /// Why, as far as the library and the device told us.
    public let reason: String
    /// What the user should do about it.
    public let nextStep: String
    /// True when the same step may succeed if tried again (a dropped connection, a busy device).
    public let isTransient: Bool

    public init(
        _ kind: Kind, step: String, device: DeviceIdentity?, reason: String, nextStep: String,
        isTransient: Bool = false
    ) {
        self.kind = kind
        self.step = step
        self.device = device
        self.reason = reason
        self.nextStep = nextStep
        self.isTransient = isTransient
    }

    public var description: String {
        let who = device?.description ?? "The device"
        switch kind {
        // Pairing problems read as instructions first; the C-level detail follows in brackets.
        case .trustPending:
            return
                "\(who) asks to trust this computer: unlock it and tap Trust (\(step): \(reason)). \(nextStep)"
        case .passcodeLocked:
            return "\(who) is passcode-locked: unlock it (\(step): \(reason)). \(nextStep)"
        default:
            let subject = device.map { " on \($0)" } ?? ""
            return "\(step) failed\(subject): \(reason). \(nextStep)"
        }
    }

    /// The same error with the device identity filled in (errors raised below the façade may not
    /// know the device's name yet).
    func on(_ device: DeviceIdentity) -> MobileDeviceError {
        MobileDeviceError(
            kind, step: step, device: self.device ?? device, reason: reason, nextStep: nextStep,
            isTransient: isTransient)
    }

    /// A service connection that could not be made or broke: worth another try, with the device
    /// unlocked and connected.
    static func connectionBroke(step: String, device: DeviceIdentity?, reason: String) -> MobileDeviceError {
        MobileDeviceError(
            .connectionLost, step: step, device: device, reason: reason,
            nextStep: "Keep the device unlocked and connected, then retry.", isTransient: true)
    }

    /// What to check when a Wi-Fi device cannot be found or stops answering.
    static var networkNextStep: String {
        "It is asleep or off the network: wake it (unlock it), check that it is on the same network as "
            + "this computer and that Wi-Fi sync is on (`hadeploy pair DEVICE` over USB once turns it on). "
            + "`hadeploy devices` lists the Wi-Fi devices hadeploy finds, with their addresses."
    }

    /// The same error for a device reached over Wi-Fi: a lost or missing connection is about the
    /// network, not a cable.
    func overNetwork() -> MobileDeviceError {
        switch kind {
        case .notConnected, .connectionLost, .deadlineExceeded:
            guard nextStep != Self.networkNextStep else { return self }
            return MobileDeviceError(
                kind, step: step, device: device, reason: reason + " (over Wi-Fi)",
                nextStep: Self.networkNextStep, isTransient: isTransient)
        default:
            return self
        }
    }

    /// The same error with secret strings replaced by `***`.
    func redacted(by redactor: Redactor) -> MobileDeviceError {
        MobileDeviceError(
            kind, step: redactor.redact(step), device: device, reason: redactor.redact(reason),
            nextStep: redactor.redact(nextStep), isTransient: isTransient)
    }
}
