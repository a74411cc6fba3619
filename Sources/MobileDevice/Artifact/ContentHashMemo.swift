import Foundation
import HADeployCore

/// Content hashes computed in this process, by artifact path and fingerprint: a deploy installing
/// one app on 24 devices reads and hashes it once, not once per device (each device's install
/// asks at the same time; the later ones wait for the first). A changed artifact has another
/// fingerprint, so it is hashed again; an artifact without one is always hashed.
actor ContentHashMemo {
    static let shared = ContentHashMemo()

    private var hashes: [String: Task<String, any Error>] = [:]

    func hash(of app: AppArtifact, in fileSystem: any FileSystem) async throws -> String {
        guard let fingerprint = app.fingerprint else {
            return try await USBDevice.offPool { try app.hashed(in: fileSystem).contentHash }
        }
        let key = app.url.path + "\n" + fingerprint
        if let running = hashes[key] { return try await running.value }
        let task = Task { try await USBDevice.offPool { try app.hashed(in: fileSystem).contentHash } }
        hashes[key] = task
        do {
            return try await task.value
        } catch {
            hashes[key] = nil
            throw error
        }
    }
}
