import Foundation
import HADeployCore
import HostCrypto

/// Whether the lockdownd at a Wi-Fi address is the device a pair record was made with. An mDNS
/// answer or an `address:` only says where to look, and `GetValue UniqueDeviceID` is answered to
/// anyone: a host on the Wi-Fi (or a local user, since port 5353 is shared) can claim any UDID. So
/// before an address is listed, hadeploy starts a lockdown session there with the record's HostID
/// and completes the TLS handshake lockdownd asks for: only the holder of the private key of the
/// record's `DeviceCertificate` can finish it with that certificate. Nothing is sent inside the
/// session.
enum WiFiIdentity {
    enum Outcome: Equatable {
        case proven
        case unproven(String)
    }

    /// How long each read or write of the proof may take (the handshake of an iOS 9 iPad over a
    /// busy Wi-Fi included).
    static let patience: Double = 5

    /// Proves that the lockdownd at `address` holds `record`'s DeviceCertificate (`record`: the pair
    /// record's plist, nil when this host has none for `udid`).
    static func prove(udid: String, at address: String, record: Data?) -> Outcome {
        guard let record else {
            return .unproven("no pair record for it on this host: pair it over USB first (hadeploy pair)")
        }
        guard let fields = PlistBridge.parse(record)?.dictionary,
            let hostID = fields["HostID"]?.string,
            let deviceCertificate = fields["DeviceCertificate"]?.data.flatMap({
                String(data: $0, encoding: .utf8)
            }),
            let hostCertificate = fields["HostCertificate"]?.data.flatMap({
                String(data: $0, encoding: .utf8)
            }),
            let hostKey = fields["HostPrivateKey"]?.data.flatMap({ String(data: $0, encoding: .utf8) })
        else { return .unproven("its pair record lacks the certificates and keys a pairing keeps") }
        let expected: X509Certificate
        let certificate: X509Certificate
        let key: RSAPrivateKey
        do {
            expected = try X509Certificate(pem: deviceCertificate)
            certificate = try X509Certificate(pem: hostCertificate)
            key = try RSAPrivateKey(pem: hostKey)
        } catch {
            return .unproven("its pair record's certificates cannot be read: \(error)")
        }
        let socket: ProbeSocket
        switch ProbeSocket.openTCP(host: address, port: WiFiDevice.lockdownPort, timeout: patience) {
        case .success(let opened): socket = opened
        case .failure(let why): return .unproven("lockdownd at \(address) cannot be reached: \(why)")
        }
        var request: [String: PlistValue] = [
            "Label": .string("hadeploy"), "ProtocolVersion": .string("2"), "Request": .string("StartSession"),
            "HostID": .string(hostID),
        ]
        if let buid = fields["SystemBUID"]?.string { request["SystemBUID"] = .string(buid) }
        guard let answer = exchange(socket, request) else {
            return .unproven("no answer to StartSession")
        }
        if let error = answer["Error"]?.string {
            if error == "InvalidHostID" {
                return .unproven(
                    "StartSession refused: InvalidHostID — it no longer knows this computer's pairing (its trust "
                        + "was reset, e.g. Reset Location & Privacy): pair it again over USB with hadeploy pair"
                )
            }
            return .unproven("StartSession refused: \(error)")
        }
        guard answer["EnableSessionSSL"]?.bool == true else {
            return .unproven("StartSession did not ask for TLS")
        }
        do {
            guard
                try TLSPeerProof.serverHolds(expected, fd: socket.fd, certificate: certificate, key: key)
            else {
                return .unproven("it presented a certificate other than the pair record's DeviceCertificate")
            }
        } catch {
            return .unproven("no TLS handshake: \(error)")
        }
        return .proven
    }

    /// One lockdown request in plain text (4-byte big-endian length, XML plist) and its answer; nil
    /// when none comes whole within the socket's timeout (answers over 1 MiB are refused).
    static func exchange(_ socket: ProbeSocket, _ request: [String: PlistValue]) -> [String: PlistValue]? {
        guard let body = PlistBridge.xml(.dictionary(request)) else { return nil }
        var length = UInt32(body.count).bigEndian
        guard socket.sendAll(Data(bytes: &length, count: 4) + body) else { return nil }
        let header = socket.receive(count: 4)
        guard header.data.count == 4 else { return nil }
        let size = header.data.reduce(0) { $0 << 8 | Int($1) }
        guard size > 0, size < 1 << 20 else { return nil }
        let answer = socket.receive(count: size)
        guard answer.data.count == size else { return nil }
        return PlistBridge.parse(answer.data)?.dictionary
    }
}
