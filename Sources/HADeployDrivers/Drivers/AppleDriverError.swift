import DeployModel
import HADeployCore

/// Why a simctl, rosettasim-ctl, devicectl or pymobiledevice3 step failed: what, on which device, and
/// what the user can do next. Built only from redacted text, so it never carries a secret.
public struct AppleDriverError: Error, CustomStringConvertible, TransientClassifying, Sendable {
    public enum Kind: String, Sendable {
        /// The tool is not installed, or this host cannot run it at all.
        case toolMissing
        /// A precondition outside hadeploy is not met (no tunnel, no such simulator...).
        case unavailable
        /// The tool ran and reported a failure.
        case failed
        /// The tool's output was not what its documented format promises.
        case unexpectedOutput
    }

    public var kind: Kind
    /// The step: `connect`, `install`, `launch`...
    public var step: String
    /// The device or simulator (its name or UDID).
    public var device: String
    public var reason: String
    /// The next thing to try, if there is one.
    public var fix: String?
    public var isTransient: Bool

    public init(
        _ kind: Kind, step: String, device: String, reason: String, fix: String? = nil,
        isTransient: Bool = false
    ) {
        self.kind = kind
        self.step = step
        self.device = device
        self.reason = reason
        self.fix = fix
        self.isTransient = isTransient
    }

    public var description: String {
        "\(device): \(step): \(reason)" + (fix.map { " — \($0)" } ?? "")
    }

    /// The device's own words for "behind the passcode", as the tools pass them on: SpringBoard's
    /// "was not, or could not be, unlocked" (DVT, pymobiledevice3), devicectl's
    /// `FBSOpenApplicationErrorDomain` 7 ("Locked"), the image mounter's `DeviceLocked`.
    static func saysLocked(_ text: String) -> Bool {
        text.contains("could not be, unlocked") || text.contains("FBSOpenApplicationErrorDomain 7)")
            || text.contains("DeviceLocked")
    }

    /// The error for a macOS-only tool asked for on another host: said before anything runs.
    static func needsMacOS(tool: String, step: String, device: String, host: HostPlatform) -> AppleDriverError
    {
        AppleDriverError(
            .toolMissing, step: step, device: device,
            reason:
                "\(tool) is part of Xcode and only runs on macOS; this host is \(host == .linux ? "Linux" : "\(host)")",
            fix: "deploy this device from a Mac with Xcode, or leave it out of the targets on this host")
    }
}

extension AppleDriverError: DeviceLockClassifying {
    public var isDeviceLocked: Bool { Self.saysLocked(reason) }
}
