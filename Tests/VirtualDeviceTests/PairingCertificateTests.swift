import Foundation
import HostCrypto
import Testing

@testable import VirtualDevice

extension VirtualDeviceSuite {
    /// The pair record's certificates as the real `openssl x509` reads them: the fields
    /// libimobiledevice's own pairing writes (PROTOCOL.md §2.5), which the clients accept.
    @Suite("pairing certificates: fields as openssl x509 reads them")
    struct PairingCertificateTests {
        /// `openssl x509 -noout -text` (plus `extra` options) on `pem`, through a file.
        static func x509(_ pem: String, _ extra: [String] = []) async throws -> String {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "pair-\(UUID().uuidString).pem")
            try Data(pem.utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let result = try await ToolRunner.run(
                path: "/usr/bin/openssl", ["x509", "-in", file.path, "-noout"] + extra, environment: [:],
                timeout: 20)
            #expect(result.status == 0, "\(result)")
            return result.stdout
        }

        /// The lines of `openssl x509 -text` that name fields, without key and signature bytes and
        /// without the dates.
        static func fields(_ text: String) -> [String] {
            text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty && !$0.hasPrefix("Not Before") && !$0.hasPrefix("Not After")
                    && $0.range(of: #"^([0-9a-fA-F]{2}:)*[0-9a-fA-F]{2}:?$"#, options: .regularExpression)
                        == nil
            }
        }

        static func expectedFields(serial: Int, extensions: [String]) -> [String] {
            [
                "Certificate:", "Data:", "Version: 3 (0x2)", "Serial Number: \(serial) (0x\(serial))",
                "Signature Algorithm: sha256WithRSAEncryption", "Issuer:", "Validity", "Subject:",
                "Subject Public Key Info:", "Public Key Algorithm: rsaEncryption", "Public-Key: (2048 bit)",
                "Modulus:", "Exponent: 65537 (0x10001)", "X509v3 extensions:",
            ] + extensions + ["Signature Algorithm: sha256WithRSAEncryption", "Signature Value:"]
        }

        @Test("root, host and device certificates carry the right keys and the fields real clients accept")
        func pairRecordCertificates() async throws {
            let deviceKey = try RSAPrivateKey(generatingBits: 2048)
            let material = try PairingCertificateFactory.makeMaterial(devicePublicKey: deviceKey.publicKey)

            #expect(
                Self.fields(try await Self.x509(material.rootCertificatePEM, ["-text"]))
                    == Self.expectedFields(
                        serial: 0, extensions: ["X509v3 Basic Constraints: critical", "CA:TRUE"]))
            #expect(
                Self.fields(try await Self.x509(material.hostCertificatePEM, ["-text"]))
                    == Self.expectedFields(
                        serial: 0,
                        extensions: [
                            "X509v3 Basic Constraints: critical", "CA:FALSE", "X509v3 Key Usage: critical",
                            "Digital Signature, Key Encipherment",
                        ]))
            let device = try await Self.x509(material.deviceCertificatePEM, ["-text"])
            #expect(
                Self.fields(device)
                    == Self.expectedFields(
                        serial: 0,
                        extensions: [
                            "X509v3 Basic Constraints: critical", "CA:FALSE",
                            "X509v3 Subject Key Identifier:",
                            "X509v3 Key Usage: critical", "Digital Signature, Key Encipherment",
                        ]))

            // The device certificate carries the device's key (as OpenSSL prints it), the host and
            // root certificates the keys stored next to them.
            #expect(
                try await Self.x509(material.deviceCertificatePEM, ["-pubkey"])
                    == deviceKey.publicKey.subjectPublicKeyInfoPEM)
            #expect(
                PairingCertificateFactory.certificate(
                    material.deviceCertificatePEM, carries: deviceKey.publicKey))
            #expect(
                !PairingCertificateFactory.certificate(
                    material.hostCertificatePEM, carries: deviceKey.publicKey))
            let hostKey = try RSAPrivateKey(pem: material.hostPrivateKeyPEM)
            let rootKey = try RSAPrivateKey(pem: material.rootPrivateKeyPEM)
            #expect(try X509Certificate(pem: material.hostCertificatePEM).carries(hostKey.publicKey))
            #expect(try X509Certificate(pem: material.rootCertificatePEM).carries(rootKey.publicKey))

            // Valid from a minute ago for ten years.
            let dates = try await Self.x509(material.deviceCertificatePEM, ["-startdate", "-enddate"])
            let parser = DateFormatter()
            parser.locale = Locale(identifier: "en_US_POSIX")
            parser.timeZone = TimeZone(identifier: "GMT")
            parser.dateFormat = "MMM d HH:mm:ss yyyy 'GMT'"
            let values = dates.split(separator: "\n").map {
                parser.date(
                    from: String($0.split(separator: "=", maxSplits: 1)[1]).replacingOccurrences(
                        of: "  ", with: " "))
            }
            let notBefore = try #require(values.first ?? nil)
            let notAfter = try #require(values.last ?? nil)
            #expect(abs(notBefore.timeIntervalSinceNow + 60) < 30)
            #expect(abs(notAfter.timeIntervalSince(notBefore) - (10 * 365 * 24 * 3600 + 60)) < 2)
        }

        @Test("the self-signed TLS certificate is the device key's, serial 1, not a CA")
        func selfSignedDeviceCertificate() async throws {
            let deviceKey = try RSAPrivateKey(generatingBits: 2048)
            let pem = try PairingCertificateFactory.selfSignedDeviceCertificate(deviceKey: deviceKey)
            #expect(
                Self.fields(try await Self.x509(pem, ["-text"]))
                    == Self.expectedFields(
                        serial: 1, extensions: ["X509v3 Basic Constraints: critical", "CA:FALSE"]))
            #expect(PairingCertificateFactory.certificate(pem, carries: deviceKey.publicKey))
        }
    }
}
