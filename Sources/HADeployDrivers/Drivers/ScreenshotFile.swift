import Foundation
import HADeployCore

/// Reads back a screenshot a tool wrote to a file, checking that it really is a PNG.
enum ScreenshotFile {
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    static func read(_ file: URL, in fileSystem: any FileSystem, step: String, device: String) throws -> Data
    {
        guard let data = fileSystem.contents(atPath: file.path), !data.isEmpty else {
            throw AppleDriverError(
                .unexpectedOutput, step: step, device: device,
                reason: "the tool reported success but wrote no screenshot to \(file.path)")
        }
        guard data.starts(with: pngSignature) else {
            throw AppleDriverError(
                .unexpectedOutput, step: step, device: device,
                reason:
                    "the screenshot is not a PNG (\(data.count) bytes starting \(data.prefix(4).map { String(format: "%02x", $0) }.joined()))"
            )
        }
        return data
    }
}
