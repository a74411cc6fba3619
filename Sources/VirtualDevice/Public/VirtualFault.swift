/// A misbehaviour the emulated device shows on demand, like a real device or cable would.
///
/// JSON form (control socket, profile files): Swift's synthesized coding of an enum with associated
/// values, e.g. `{"throttle":{"bytesPerSecond":35000000}}`, `{"crashOnLaunch":{}}`.
public enum VirtualFault: Sendable, Codable, Equatable, Hashable {
    /// The connection carrying an AFC upload is cut after this many bytes of file data
    /// (a cable pulled mid-install).
    case dropUploadAfter(bytes: Int)
    /// The device stops answering at the given point (the connection stays open, nothing comes back).
    case stall(at: VirtualStallPoint)
    /// The USB link moves at most this many bytes per second (USB 2.0 ≈ 35 MB/s).
    case throttle(bytesPerSecond: Int)
    /// `Install`/`Upgrade` fails with this installation_proxy error name (e.g. "ApplicationVerificationFailed").
    case failInstall(error: String, description: String?)
    /// A launched app crashes right away and leaves a crash report.
    case crashOnLaunch
    /// Pairing waits for the "Trust this computer?" dialog (`PairingDialogResponsePending`).
    case pairingDialogPending
    /// The device is locked with a passcode (`PasswordProtected` on pairing, `DeviceLocked` on mounting).
    case passcodeLocked
    /// The connection is closed at the given point without a word, as when usbmuxd is killed or
    /// the cable pulled (supported at `install`: after the first progress message).
    case closeConnection(at: VirtualStallPoint)
    /// The device answers at the given point with bytes that are not its protocol, then goes
    /// silent with the connection open, as a port answered by something else would (supported at
    /// `lockdown`: a frame announcing 1,024 bytes of which a 43-byte HTML fragment comes).
    case garble(at: VirtualStallPoint)
    /// `VerifyingApplication` takes this many seconds with nothing sent meanwhile, as a real device
    /// checking a large app's signature (clients must tell a quiet device from a lost one).
    case slowVerification(seconds: Double)
    /// Once: after the next DTX launch has been answered, the device's developer tunnels are cut as
    /// soon as the client has read the answer (its next message on that connection, or its closing),
    /// as a cable moved to another port between two steps would (the next step finds it gone).
    case dropDeveloperTunnelAfterLaunch
    /// Once: the next lockdownd connection is closed without a word after its first request, as a
    /// device re-enumerating on USB or a Wi-Fi hiccup would (the connection after it works).
    case dropNextLockdownConnection
    /// Restarted and not unlocked since (Before First Unlock): the services that reach the user's data
    /// answer `EscrowLocked` ("Escrow unlock unavailable because user has not unlocked device since
    /// boot"), pairing `PasswordProtected`, a launch is refused as on a locked device. Clearing it is
    /// the first unlock.
    case beforeFirstUnlock
    /// Developer Mode is off (iOS 16+, after an update or a restore): amfi's `DeveloperModeStatus`
    /// reads false, and the developer services, the image mount and the launch are refused.
    case developerModeOff

    /// Short stable name, used in logs and for clearing one kind of fault.
    public var kind: String {
        switch self {
        case .dropUploadAfter: return "dropUploadAfter"
        case .stall: return "stall"
        case .throttle: return "throttle"
        case .failInstall: return "failInstall"
        case .crashOnLaunch: return "crashOnLaunch"
        case .pairingDialogPending: return "pairingDialogPending"
        case .passcodeLocked: return "passcodeLocked"
        case .closeConnection: return "closeConnection"
        case .garble: return "garble"
        case .slowVerification: return "slowVerification"
        case .dropDeveloperTunnelAfterLaunch: return "dropDeveloperTunnelAfterLaunch"
        case .dropNextLockdownConnection: return "dropNextLockdownConnection"
        case .developerModeOff: return "developerModeOff"
        case .beforeFirstUnlock: return "beforeFirstUnlock"
        }
    }
}
