/// Why an image could not be encoded or decoded.
public struct ImageCodecError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let reason: String

    public var description: String {
        "\(operation) failed: \(reason). Check that the data is a complete PNG or TIFF image."
    }
}
