import Foundation
import HostCrypto

/// A twin's device key and the DeviceCertificate of its pre-paired record, both written by the
/// emulator before it used OpenSSL (swift-crypto's PKCS#1 PEM, swift-certificates' certificate):
/// what an existing twin state directory holds. Test material, no secret.
enum LegacyTwinState {
    static let deviceKeyPEM = """
        -----BEGIN RSA PRIVATE KEY-----
        MIIEpQIBAAKCAQEAypbEKMy8/KNoFJn9ZPPoa2JwWX34+Wu/klt5YqUooHjOLWaK
        90lpuvjW3MH1p0zJt0xzy44pMNQyv2KbBwz4tGhEHcV5Z4jhgBxUYLzu3ql940uO
        JziMOphFtXY2YRZwVrgl+kZeT++b4U3SSceMv4CEySVMlO9k+ul2UHlU6e/5mqZX
        tPyxilh9TTzeV7jQoWirP7PjgNe+n4eJ2M1P/IhNcCYRthKqKsHjPp1ROjUGqds3
        23hQlbibJmmq/LjXVRyEAw4dg2lwgDiUxbBwL8jJlQyksPVajCczJQN7Lyqla8NQ
        goOZBYdhXRN707742td2++2BlDmXPNrtzM+hgQIDAQABAoIBADefLE1NZSfyD230
        l4tDolD1boZLnXORnz/mSI4KbXydnnH9oPLjH5nbn1ZuFG2yGgHvBi3horKK2EIO
        pyTI7XHO3MDVyo7gGJWtcYc76FOO8obY5Dclge7GhwEa6zQ9zmso1RiBgHxu+3vg
        +3cRSDX96bc2O+/6SF3Rgo/2uBcgNG3bJ3rKe6k+STwKIXVm1zbZLEBoh7iK3ILK
        krHB139G15t988IeE+ufzNErMF38MIIdg6Vh1CcGiC7v7jakEWUajoru3JgpSl2Z
        OI4EzhMEJLmZECnC9ALRrn7Dpx5OUeKgqkY+hbgs0XEXU6xSGeH0NLUVPQo7QvkJ
        OIms3acCgYEA6b6aDIXdGYupfnVxPluNGH0NsOYXoyYW+ritER+69Pixn00/a/vA
        IT3Qq7namx0WiW1W2NvrBIzDcQWqhGNqRfHHX6ATq44bSoEIE4Q/1zf0t2YwHbDN
        JTU9+/CXBUGR4OH6Ks8KH2JEFmG/fsCpD0zLpvCY4bdyQ4PpQlCehr8CgYEA3eDD
        YXx6ZLda/1m6i4aQK4B6qSy4EjbSFEUbxKvGlYfK4yvSF6cEqS7nfkkymhj8OQMJ
        yNDSkc0JWaekS2PJZGfhAIp7X4MamF9F0LgZF0CvAVzlpoYZUMe7MVnaj41bTYUe
        Uhzx3+wroZIc6SPR93fr3OMwV8tNmhnYBFJ+J78CgYEApmK6D63+XB/RkCYTbVsI
        DeV+qGyxaL5FX0W0VFss3xJkhcwcGEbFViRFdOhAV2gWUc8WIhoxqjR1Lu/kmIaX
        8KAR1t0BA36NqLQ+xn2+X/oB5ccE+y2Oai0DKWLybZhmOhlB1dU5FGwDoZcFFDoa
        XbzBvtzHRu0plivBECaJIcsCgYEA0Szp5cktti/qORwFsy58UpbAjSdcrcdDDNsO
        T77F7AjmLH8OhT/vM/TFR5iIfSCbAMCtg8XjDpOngf9685wyrFcGl7T2lNgLxaTk
        M96rwPE5S+ahlvmLek2iW+djFrzkW9Po/u7M1RdZFuyiFuWvOEe1dDw3Qj2nfmVo
        8sI2rw8CgYEAqjtxLCrR9k9XlumxxTQDqdqL4x1iQ6aExiQqw59DTHxr3PTkevar
        LF4XRxOJBDFt40J4Yyu/qE0S2xJJi2OkuhbeDcI+cMrwWGLdA49xibVxS+gg7sqd
        3a4SCFYhSxLAz+7XPy2uz1hizK8cCkg2A+WyW8ipwxLDGJs4WtBOacM=
        -----END RSA PRIVATE KEY-----
        """

    static let deviceCertificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIICujCCAaKgAwIBAgIBADANBgkqhkiG9w0BAQsFADAAMB4XDTI2MTEyNDA1MTg1
        NFoXDTM2MTEyMTA1MTk1NFowADCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoC
        ggEBAMqWxCjMvPyjaBSZ/WTz6GticFl9+Plrv5JbeWKlKKB4zi1mivdJabr41tzB
        9adMybdMc8uOKTDUMr9imwcM+LRoRB3FeWeI4YAcVGC87t6pfeNLjic4jDqYRbV2
        NmEWcFa4JfpGXk/vm+FN0knHjL+AhMklTJTvZPrpdlB5VOnv+ZqmV7T8sYpYfU08
        3le40KFoqz+z44DXvp+HidjNT/yITXAmEbYSqirB4z6dUTo1BqnbN9t4UJW4myZp
        qvy411UchAMOHYNpcIA4lMWwcC/IyZUMpLD1WownMyUDey8qpWvDUIKDmQWHYV0T
        e9O++NrXdvvtgZQ5lzza7czPoYECAwEAAaM/MD0wDAYDVR0TAQH/BAIwADAdBgNV
        HQ4EFgQUcy0+NabwWqxVfZnljZWsP1JMio0wDgYDVR0PAQH/BAQDAgWgMA0GCSqG
        SIb3DQEBCwUAA4IBAQBaDGi6uEdeyk+T8v4ID/zTDYiYOF+FnzVrkcmHCY8ZtSP6
        DYKUkkpAWX1i8GAZ8CzpkBJ1nltM0EVe/jTzP3uKJ2spROFJbo8dHO2eTg7KPgdW
        Q5vzuhMlbdrVXxjK1xK6r9RDclnRyTh2ZDisSmHZLeIYUzEDP85VzWIV305fNCjz
        BVkCPB7STmtTc0N0pV+QGIvu3ywdc3VM+3G1jfa4Rmcxr9Q9e33959Ypx5vTsZZc
        zFHhl2lJq9p2SrN5vThMU5a+uoWsPLZgrMa0/AEoEyV7bVmUVPWQpRgUvlJHxqlq
        iw73vdZUJrwjoaF00NdLa1Ny5YjW70AEFlBFohxI
        -----END CERTIFICATE-----
        """
}
