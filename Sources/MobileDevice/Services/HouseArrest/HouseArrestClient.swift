import CIMobileDevice
import Foundation

/// Owns a `house_arrest_client_t`: asks for one app's data container (`VendContainer`) and turns
/// the connection into AFC rooted there. Use only on the device's worker.
final class HouseArrestClient: ServiceClient, @unchecked Sendable {
    static let service = "com.apple.mobile.house_arrest"

    init(device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity) throws {
        try super.init(
            device: device, descriptor: descriptor, identity: identity, success: HOUSE_ARREST_E_SUCCESS,
            new: house_arrest_client_new,
            connectionDepth: 3,
            failure: { code in
                MobileDeviceError(
                    .serviceUnavailable, step: "house_arrest_client_new", device: identity,
                    reason: "house_arrest did not start (error \(code.rawValue))",
                    nextStep: "Unlock the device and retry.", isTransient: true)
            },
            release: { _ = house_arrest_client_free($0) })
    }

    /// `VendContainer` for `bundleID`, then AFC over the same connection, rooted at the container.
    func vendContainer(_ bundleID: String) throws -> AFCClient {
        let sent = house_arrest_send_command(raw, "VendContainer", bundleID)
        guard sent == HOUSE_ARREST_E_SUCCESS else {
            throw MobileDeviceError(
                .connectionLost, step: "house_arrest VendContainer", device: identity,
                reason: "the request could not be sent (error \(sent.rawValue))", nextStep: "Retry.",
                isTransient: true)
        }
        var answer: plist_t?
        let received = house_arrest_get_result(raw, &answer)
        defer { if let answer { plist_free(answer) } }
        guard received == HOUSE_ARREST_E_SUCCESS, let answer else {
            throw MobileDeviceError(
                .connectionLost, step: "house_arrest VendContainer", device: identity,
                reason: "no answer (error \(received.rawValue))", nextStep: "Retry.", isTransient: true)
        }
        let result = PlistBridge.value(of: answer)?.dictionary ?? [:]
        if let error = result["Error"]?.string {
            throw Self.vendError(error, bundleID: bundleID, identity: identity)
        }
        var afc: afc_client_t?
        let opened = afc_client_new_from_house_arrest_client(raw, &afc)
        guard opened == AFC_E_SUCCESS, let afc else {
            throw AFCClient.error(
                opened, step: "afc_client_new_from_house_arrest_client", path: nil, identity: identity)
        }
        return AFCClient(raw: afc, device: device, identity: identity, service: Self.service, owner: self)
    }

    static func vendError(_ error: String, bundleID: String, identity: DeviceIdentity) -> MobileDeviceError {
        if error == "InstallationLookupFailed" {
            return MobileDeviceError(
                .appNotInstalled, step: "house_arrest VendContainer \(bundleID)", device: identity,
                reason: "the device will not open \(bundleID)'s data container (InstallationLookupFailed): "
                    + "it is not installed, or not a development-signed build (get-task-allow)",
                nextStep:
                    "Install a development-signed build, or verify through Home Assistant (ha_integration).")
        }
        return MobileDeviceError(
            .protocolError, step: "house_arrest VendContainer \(bundleID)", device: identity,
            reason: "the device answered \(error)", nextStep: "Unlock the device and retry.")
    }
}
