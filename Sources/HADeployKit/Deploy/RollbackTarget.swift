import DeployModel
import DeviceSpec
import Foundation

/// What `hadeploy rollback DEVICE` works on: the device as devices.yaml describes it, and the app's
/// bundle id: `--bundle-id`, else the app the last deploy from here installed on that device
/// (`DeployRecords`), else `.env`'s `BUNDLE_ID` (the key the old scripts used). nil when none of
/// them names one: a jailbroken device is then asked which app it keeps backups of.
struct RollbackTarget {
    let device: Device
    let bundleID: String?

    /// `transport` names the backend in errors; `accepts` says whether the device is reached by it.
    init(
        matrix: DeviceMatrix, variables: [String: String], device id: String, bundleID: String?,
        records: DeployRecords?, transport: String, rejection: String, accepts: (Device) -> Bool
    ) throws {
        guard let target = try TargetResolver(matrix: matrix).resolve([id]).first, accepts(target) else {
            throw TransportUnavailable(device: id, transport: transport, reason: rejection)
        }
        self.device = target
        self.bundleID =
            [bundleID, records?.read(device: target.id)?.bundleID, variables["BUNDLE_ID"]]
            .compactMap { $0 }.first { !$0.isEmpty }
    }

    static func noBundleID(_ device: String, transport: String, asked: String? = nil) -> TransportUnavailable
    {
        TransportUnavailable(
            device: device, transport: transport,
            reason: "no bundle id: no deploy from this project recorded one"
                + (asked.map { " and \($0)" } ?? "") + "; pass --bundle-id or set BUNDLE_ID in .env")
    }
}
