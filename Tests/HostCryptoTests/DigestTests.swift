import Foundation
import HostCrypto
import Testing

/// SHA-256 and HMAC-SHA1 against published vectors: the hashes hadeploy records on devices and in
/// reports must not change with the library that computes them.
struct DigestTests {
    @Test func sha256MatchesTheFIPS180Vectors() {
        #expect(
            SHA256Hasher.hex(of: Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
        #expect(
            SHA256Hasher.hex(of: Data("abc".utf8))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256Hasher.hex(of: Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func aStreamFedInPiecesHashesLikeItsBytesInOnePiece() {
        // One million "a" (FIPS 180-2 appendix B.3), fed in uneven pieces, some empty, some raw.
        let hasher = SHA256Hasher()
        let piece = Data(repeating: UInt8(ascii: "a"), count: 999)
        var fed = 0
        var round = 0
        while fed < 1_000_000 {
            let count = min(1_000_000 - fed, (round % 7) * 143 + 1)
            if round % 2 == 0 {
                hasher.update(piece.prefix(count))
            } else {
                piece.prefix(count).withUnsafeBytes { hasher.update($0) }
            }
            hasher.update(Data())
            fed += count
            round += 1
        }
        #expect(hasher.finalizeHex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func finalizeGivesTheThirtyTwoDigestBytes() {
        let hasher = SHA256Hasher()
        hasher.update(Data("abc".utf8))
        let digest = hasher.finalize()
        #expect(digest.count == 32)
        #expect(Hex.lowercase(digest) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    /// RFC 2202 section 3, test cases 1, 2, 3, 6 (a key longer than the block) and 7.
    @Test func hmacSHA1MatchesRFC2202() {
        let cases: [(key: Data, message: Data, code: String)] = [
            (
                Data(repeating: 0x0b, count: 20), Data("Hi There".utf8),
                "b617318655057264e28bc0b6fb378c8ef146be00"
            ),
            (
                Data("Jefe".utf8), Data("what do ya want for nothing?".utf8),
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
            ),
            (
                Data(repeating: 0xaa, count: 20), Data(repeating: 0xdd, count: 50),
                "125d7342b9ac11cd91a39af48aa17b4f63f175d3"
            ),
            (
                Data(repeating: 0xaa, count: 80),
                Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "aa4ae5e15272d00e95705637ce8a3b55ed402112"
            ),
            (
                Data(repeating: 0xaa, count: 80),
                Data("Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data".utf8),
                "e8e99d0f45237d786d6bbaa7965c7808bbff1a91"
            ),
        ]
        for vector in cases {
            #expect(
                Hex.lowercase(HMACSHA1.authenticationCode(for: vector.message, key: vector.key))
                    == vector.code)
        }
    }
    /// RFC 4231's test cases 1, 2, 3 and 6: the plan file signature (`HADEPLOY_PLAN_KEY`).
    @Test func hmacSHA256MatchesTheRFC4231Vectors() {
        let cases: [(key: Data, message: Data, code: String)] = [
            (
                Data(repeating: 0x0b, count: 20), Data("Hi There".utf8),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
            ),
            (
                Data("Jefe".utf8), Data("what do ya want for nothing?".utf8),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
            ),
            (
                Data(repeating: 0xaa, count: 20), Data(repeating: 0xdd, count: 50),
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
            ),
            (
                Data(repeating: 0xaa, count: 131),
                Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
        ]
        for vector in cases {
            let code = HMACSHA256.authenticationCode(for: vector.message, key: vector.key)
            #expect(Hex.lowercase(code) == vector.code)
            #expect(HMACSHA256.isValid(code, for: vector.message, key: vector.key))
            var forged = code
            forged[forged.count - 1] ^= 1
            #expect(!HMACSHA256.isValid(forged, for: vector.message, key: vector.key))
            #expect(!HMACSHA256.isValid(Array(code.prefix(16)), for: vector.message, key: vector.key))
        }
    }
}
