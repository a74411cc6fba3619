import Foundation
import HADeployCore

/// Reads back a screenshot a tool wrote to a file, checking that it really is a PNG.
enum ScreenshotFile {
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The most bytes a screenshot file is read into memory (a screen's PNG is a few MB).
    static let maximumBytes = 128 << 20

    static func read(_ file: URL, in fileSystem: any FileSystem, step: String, device: String) throws -> Data
    {
        // What the tool left is read as a file, not followed as a link, and not read without end.
        if let attributes = try? fileSystem.attributesOfItem(atPath: file.path) {
            if let type = attributes[.type] as? FileAttributeType, type != .typeRegular {
                throw AppleDriverError(
                    .unexpectedOutput, step: step, device: device,
                    reason:
                        "the screenshot at \(file.path) is not a regular file (it is \(SystemErrorText.kind(type)))"
                )
            }
            if let size = (attributes[.size] as? NSNumber)?.int64Value, size > maximumBytes {
                throw AppleDriverError(
                    .unexpectedOutput, step: step, device: device,
                    reason: "the screenshot at \(file.path) is \(size) bytes, more than the "
                        + "\(maximumBytes >> 20) MB a screenshot can be")
            }
        }
        guard let data = fileSystem.contents(atPath: file.path), !data.isEmpty else {
            throw AppleDriverError(
                .unexpectedOutput, step: step, device: device,
                reason: "the tool reported success but wrote no screenshot to \(file.path)")
        }
        return try check(data, step: step, device: device)
    }

    /// `data` when it is a PNG of at most `maximumBytes`.
    static func check(_ data: Data, step: String, device: String) throws -> Data {
        guard !data.isEmpty else {
            throw AppleDriverError(
                .unexpectedOutput, step: step, device: device,
                reason: "the tool reported success but sent no screenshot")
        }
        guard data.count <= maximumBytes else {
            throw AppleDriverError(
                .unexpectedOutput, step: step, device: device,
                reason:
                    "the screenshot is \(data.count) bytes, more than the \(maximumBytes >> 20) MB a screenshot can be"
            )
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
