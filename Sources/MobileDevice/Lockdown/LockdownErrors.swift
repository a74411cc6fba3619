import CIMobileDevice
import HADeployCore

/// Turns `lockdownd_error_t` values into errors that tell the user what to do.
enum LockdownErrors {
    static func error(
        _ code: lockdownd_error_t, step: String, device: DeviceIdentity?, service: String? = nil
    ) -> MobileDeviceError {
        let udid = device?.udid ?? "<UDID>"
        let repair =
            "Re-pair: run `idevicepair unpair -u \(udid)` then `idevicepair pair -u \(udid)`, unlock the "
            + "device and tap Trust."
        switch code {
        case LOCKDOWN_E_PAIRING_DIALOG_RESPONSE_PENDING:
            return MobileDeviceError(
                .trustPending, step: step, device: device, reason: "pairing dialog response pending (-19)",
                nextStep: "Then run the command again.", isTransient: true)
        case LOCKDOWN_E_PASSWORD_PROTECTED:
            return MobileDeviceError(
                .passcodeLocked, step: step, device: device, reason: "password protected (-17)",
                nextStep: "Unlock it with its passcode, then run the command again.", isTransient: true)
        case LOCKDOWN_E_ESCROW_LOCKED:
            return MobileDeviceError(
                .passcodeLocked, step: step, device: device,
                reason:
                    "\(DeviceLockWords.beforeFirstUnlock) (escrow locked, -35: not unlocked since it booted)",
                nextStep: "Unlock it once with its passcode (or deploy with --wait-unlock 10m and unlock it "
                    + "meanwhile), then run the command again.", isTransient: true)
        case LOCKDOWN_E_USER_DENIED_PAIRING:
            return MobileDeviceError(
                .pairingDenied, step: step, device: device,
                reason: "the user tapped \"Don't Trust\" on the device (-18)",
                nextStep: "Unplug and replug the device, unlock it and tap Trust this time.")
        case LOCKDOWN_E_INVALID_HOST_ID, LOCKDOWN_E_INVALID_PAIR_RECORD, LOCKDOWN_E_MISSING_PAIR_RECORD,
            LOCKDOWN_E_MISSING_HOST_ID, LOCKDOWN_E_INVALID_CONF:
            return MobileDeviceError(
                .pairingInvalid, step: step, device: device,
                reason: "the device does not accept this computer's pair record (\(name(code)))",
                nextStep: repair)
        case LOCKDOWN_E_SSL_ERROR:
            return MobileDeviceError(
                .pairingInvalid, step: step, device: device,
                reason: "the TLS session with lockdownd failed (\(name(code)))",
                nextStep: "Replug the device; if it persists, " + repair.prefix(1).lowercased()
                    + repair.dropFirst(),
                isTransient: true)
        case LOCKDOWN_E_MUX_ERROR, LOCKDOWN_E_RECEIVE_TIMEOUT, LOCKDOWN_E_NO_RUNNING_SESSION:
            return MobileDeviceError(
                .connectionLost, step: step, device: device,
                reason: "the connection to lockdownd broke (\(name(code)))",
                nextStep: "Check the cable (or the usbmuxd host), unlock the device and try again.",
                isTransient: true)
        case LOCKDOWN_E_INVALID_SERVICE, LOCKDOWN_E_MISSING_SERVICE, LOCKDOWN_E_SERVICE_PROHIBITED:
            return MobileDeviceError(
                .serviceUnavailable, step: step, device: device,
                reason: "the device refused to start \(service ?? "the service") (\(name(code)))",
                nextStep:
                    "Developer services need the Developer Disk Image for this iOS version mounted; "
                    + "configure a DeviceSupport directory holding it.")
        case LOCKDOWN_E_SERVICE_LIMIT:
            return MobileDeviceError(
                .serviceUnavailable, step: step, device: device,
                reason: "too many connections to \(service ?? "the service") are open (-28)",
                nextStep:
                    "Close other tools talking to the device (Xcode, Finder, other hadeploy runs) and retry.",
                isTransient: true)
        default:
            return MobileDeviceError(
                .protocolError, step: step, device: device, reason: "lockdownd answered \(name(code))",
                nextStep:
                    "Replug and unlock the device, then retry; run with debug logging to see the exchange.")
        }
    }

    static func name(_ code: lockdownd_error_t) -> String {
        let names: [Int32: String] = [
            -1: "invalid argument", -2: "invalid configuration", -3: "plist error", -4: "pairing failed",
            -5: "SSL error", -6: "dict error", -7: "receive timeout", -8: "mux error",
            -9: "no running session", -10: "invalid response", -11: "missing key", -12: "missing value",
            -13: "get prohibited", -14: "set prohibited", -15: "remove prohibited", -16: "immutable value",
            -17: "password protected", -18: "user denied pairing", -19: "pairing dialog response pending",
            -20: "missing host ID", -21: "invalid host ID", -22: "session active", -23: "session inactive",
            -24: "missing session ID", -25: "invalid session ID", -26: "missing service",
            -27: "invalid service", -28: "service limit", -29: "missing pair record",
            -30: "save pair record failed", -31: "invalid pair record", -32: "invalid activation record",
            -33: "missing activation record", -34: "service prohibited", -35: "escrow locked",
            -36: "pairing prohibited over this connection", -37: "FMiP protected", -38: "MC protected",
            -39: "MC challenge required",
        ]
        return "\(names[code.rawValue] ?? "unknown error") (\(code.rawValue))"
    }
}
