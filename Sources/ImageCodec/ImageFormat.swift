import Foundation

/// The container formats the codec reads and writes.
public enum ImageFormat: String, Sendable, Codable {
    case png
    case tiff

    /// Sniffs the format from the first bytes (PNG signature, or a TIFF header in either byte order).
    public static func detect(_ data: Data) -> ImageFormat? {
        let head = [UInt8](data.prefix(8))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) || head.starts(with: [0x49, 0x49, 0x2A, 0x00]) {
            return .tiff
        }
        return nil
    }
}
