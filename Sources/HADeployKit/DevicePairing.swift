import Foundation
import HADeployCore
import MobileDevice

/// `hadeploy pair DEVICE`: pairs a USB device once, turns on its Wi-Fi connections and keeps the
/// record where the next run (hadeploy's usbmuxd) and pymobiledevice3 (`~/.pymobiledevice3`) find it.
public enum DevicePairing {
    public struct Outcome: Sendable {
        public let name: String?
        public let wifiMACAddress: String?
        public let wifiConnections: Bool
        /// Where the record was written.
        public let kept: [String]
    }

    /// `usbmuxd`: the usbmuxd the device is plugged into (nil: this machine's).
    public static func pair(
        udid: String, usbmuxd: String?, context: HADeployContext, trustWait: Duration,
        waiting: @escaping @Sendable (String) -> Void
    ) async throws -> Outcome {
        let files = context.fileSystem
        try USBTransport.route(to: usbmuxd, folders: [files.temporaryDirectory.path])
        let folder = PairRecordLocation.folder(environment: context.environment, fileSystem: files)
        let result = try await USBTransport.pair(
            udid: udid, pairRecords: folder, fileSystem: files, trustWait: trustWait, clock: context.clock,
            waiting: waiting)
        var kept: [String] = []
        if let record = result.record {
            kept.append(folder.appendingPathComponent(udid + ".plist").path)
            // pymobiledevice3 reads its records from ~/.pymobiledevice3/<UDID>.plist (its Wi-Fi lookups
            // over mDNS match them by WiFiMACAddress).
            let home =
                context.environment["HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
                ?? files.homeDirectory
            let pymobiledevice3 = home.appendingPathComponent(".pymobiledevice3")
            try files.createPrivateDirectory(at: pymobiledevice3)
            let file = pymobiledevice3.appendingPathComponent(udid + ".plist")
            try files.writePrivately(record, to: file)
            kept.append(file.path)
        }
        return Outcome(
            name: result.name, wifiMACAddress: result.wifiMACAddress, wifiConnections: result.wifiConnections,
            kept: kept)
    }
}
