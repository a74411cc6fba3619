import CIMobileDevice
import Foundation

extension USBDevice {
    /// A file from an app's data container (e.g. `Documents/ha-log.txt`) through house_arrest, or
    /// nil when the container has no such file. The app must be a development-signed build; other
    /// apps' containers are refused by the device (`.appNotInstalled`, with that reason).
    public func appDataFile(bundleID: String, path: String, maximumBytes: Int = 16 << 20) async throws
        -> Data?
    {
        try await serialized {
            let (session, lockdown) = try await openLockdown()
            let descriptor = try await session.startService(
                HouseArrestClient.service, on: lockdown, timeouts: timeouts)
            return try await session.run("house_arrest read \(path)", within: timeouts.request) {
                let client = try HouseArrestClient(
                    device: session.handle, descriptor: descriptor, identity: session.identity)
                let afc = try client.vendContainer(bundleID)
                guard try afc.fileInfo(path) != nil else { return nil }
                let handle = try afc.open(path, mode: AFC_FOPEN_RDONLY)
                defer { try? afc.close(handle, path: path) }
                var data = Data()
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
                defer { buffer.deallocate() }
                // A cap, not a loop bound: ha-log.txt rotates at 2 MB.
                while data.count < maximumBytes {
                    let count = try afc.read(handle, into: buffer, path: path)
                    if count == 0 { break }
                    data.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                }
                return data
            }
        }
    }
}
