/// The FIT protocol's CRC-16 (polynomial 0xA001, reflected, initial value 0), as the protocol
/// document describes it with a 16-entry nibble table; expanded here to a byte table once.
public enum FITCRC {
    /// The protocol's nibble table: the CRC of each 4-bit value.
    static let nibbleTable: [UInt16] = [
        0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
        0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400,
    ]

    /// The nibble algorithm applied to every byte value: one lookup per byte instead of two.
    static let byteTable: [UInt16] = (0...255).map { value in
        nibbleStep(nibbleStep(0, UInt8(value) & 0x0F), UInt8(value) >> 4)
    }

    /// One nibble of the protocol's algorithm.
    @inline(__always)
    static func nibbleStep(_ crc: UInt16, _ nibble: UInt8) -> UInt16 {
        let table = nibbleTable[Int(crc & 0x0F)]
        let shifted = (crc >> 4) & 0x0FFF
        return shifted ^ table ^ nibbleTable[Int(nibble & 0x0F)]
    }

    /// Eight tables for slicing-by-8: `slices[k][b]` is the CRC of byte `b` followed by `k` zero bytes.
    static let slices: [UInt16] = {
        var tables = byteTable
        for k in 1..<8 {
            for value in 0..<256 {
                let previous = tables[(k - 1) * 256 + value]
                tables.append((previous >> 8) ^ byteTable[Int(previous & 0xFF)])
            }
        }
        return tables
    }()

    /// Continues `crc` over `bytes`, eight bytes per step (slicing-by-8), then byte by byte.
    public static func update(_ crc: UInt16, _ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var crc = crc
        slices.withUnsafeBufferPointer { table in
            var index = 0
            let count = bytes.count
            while count - index >= 8 {
                let low = UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8
                let x = crc ^ low
                crc =
                    table[7 * 256 + Int(x & 0xFF)] ^ table[6 * 256 + Int(x >> 8)]
                    ^ table[5 * 256 + Int(bytes[index + 2])] ^ table[4 * 256 + Int(bytes[index + 3])]
                    ^ table[3 * 256 + Int(bytes[index + 4])] ^ table[2 * 256 + Int(bytes[index + 5])]
                    ^ table[256 + Int(bytes[index + 6])] ^ table[Int(bytes[index + 7])]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ table[Int(UInt8(truncatingIfNeeded: crc) ^ bytes[index])]
                index += 1
            }
        }
        return crc
    }

    /// The CRC of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt16 {
        bytes.withUnsafeBytes { update(0, $0) }
    }
}
