import CIMobileDevice
import Testing

@testable import MobileDevice

@Suite struct ErrorMessageTests {
    let iPad = DeviceIdentity(name: "iPad mini 4", udid: "00008030-001A2B3C4D5E802E")

    @Test func pendingTrustDialogReadsAsAnInstruction() {
        let error = LockdownErrors.error(
            LOCKDOWN_E_PAIRING_DIALOG_RESPONSE_PENDING, step: "lockdownd_client_new_with_handshake",
            device: iPad)
        #expect(error.kind == .trustPending)
        #expect(
            error.description.hasPrefix(
                "iPad mini 4 (UDID 00008030-001A2B3C4D5E802E) asks to trust this computer: unlock it and tap Trust"
            ))
        #expect(error.description.contains("lockdownd_client_new_with_handshake"))
    }

    @Test func passcodeLockReadsAsAnInstruction() {
        let error = LockdownErrors.error(
            LOCKDOWN_E_PASSWORD_PROTECTED, step: "lockdownd_client_new_with_handshake", device: iPad)
        #expect(error.kind == .passcodeLocked)
        #expect(
            error.description.hasPrefix(
                "iPad mini 4 (UDID 00008030-001A2B3C4D5E802E) is passcode-locked: unlock it"))
    }

    @Test func rejectedPairRecordSaysHowToPairAgain() {
        let error = LockdownErrors.error(
            LOCKDOWN_E_INVALID_HOST_ID, step: "lockdownd_client_new_with_handshake", device: iPad)
        #expect(error.kind == .pairingInvalid)
        #expect(error.description.contains("idevicepair unpair -u 00008030-001A2B3C4D5E802E"))
    }

    @Test func missingDeveloperServiceSaysMountTheImage() {
        let error = LockdownErrors.error(
            LOCKDOWN_E_INVALID_SERVICE, step: "lockdownd_start_service com.apple.mobile.screenshotr",
            device: iPad,
            service: "com.apple.mobile.screenshotr")
        #expect(error.kind == .serviceUnavailable)
        #expect(error.description.contains("Developer Disk Image"))
    }

    @Test func installErrorCarriesNameCodeAndFix() {
        let error = InstallationProxy.failure(
            name: "Install", error: "ApplicationVerificationFailed",
            description: "Failed to verify code signature",
            detail: 3_892_346_908, device: iPad)
        #expect(
            error.description
                == "installation_proxy Install failed on iPad mini 4 (UDID 00008030-001A2B3C4D5E802E): "
                + "ApplicationVerificationFailed (0xe800801c): Failed to verify code signature. Sign the app with a "
                + "certificate and a provisioning profile that include this device's UDID, then rebuild.")
    }

    @Test func secretsAreRedactedFromErrors() {
        let error = MobileDeviceError(
            .launchFailed, step: "launch with token abc123", device: iPad, reason: "refused abc123",
            nextStep: "retry")
        let redacted = error.redacted(by: Redactor(["abc123"]))
        #expect(!redacted.description.contains("abc123"))
        #expect(redacted.description.contains("***"))
    }

    @Test func crashReportNamesMatchTheProcessOnly() {
        #expect(CrashReportFinder.belongs("Demo-2024-01-31-101500.ips", to: "Demo"))
        #expect(CrashReportFinder.belongs("Demo_2019-01-31-101500_iPad.crash", to: "Demo"))
        #expect(!CrashReportFinder.belongs("DemoHelper-2024-01-31-101500.ips", to: "Demo"))
        #expect(!CrashReportFinder.belongs("Other-2024-01-31-101500.ips", to: "Demo"))
    }
}
