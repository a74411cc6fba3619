import DeviceSpec
import Foundation

/// What `hadeploy rollback DEVICE` works on: the device as devices.yaml describes it, and the app's
/// bundle id (`--bundle-id`, else `.env`'s `BUNDLE_ID`, the key the old scripts used).
struct RollbackTarget {
    let device: Device
    let bundleID: String

    /// `transport` names the backend in errors; `accepts` says whether the device is reached by it.
    init(
        matrix: DeviceMatrix, variables: [String: String], device id: String, bundleID: String?,
        transport: String, rejection: String, accepts: (Device) -> Bool
    ) throws {
        guard let target = try TargetResolver(matrix: matrix).resolve([id]).first, accepts(target) else {
            throw TransportUnavailable(device: id, transport: transport, reason: rejection)
        }
        guard let bundle = bundleID ?? variables["BUNDLE_ID"], !bundle.isEmpty else {
            throw TransportUnavailable(
                device: id, transport: transport,
                reason: "no bundle id: pass --bundle-id or set BUNDLE_ID in .env")
        }
        self.device = target
        self.bundleID = bundle
    }
}
