/// USB sticks, receivers and bridges known by their vendor:product id, with the protocol to record
/// them with: what `workout ports` tells a user about a port.
///
/// One table (``all``), first match wins: add a row for a new device (a product id, or nil for every
/// product of a vendor that only makes serial bridges).
public struct KnownSerialDevice: Sendable, Hashable {
    /// The USB vendor id.
    public var vendorID: Int
    /// The USB product ids; nil matches every product of the vendor.
    public var productIDs: [Int]?
    /// What it is: `ANT USB-m stick`, `u-blox GPS receiver`, `USB-serial bridge`.
    public var name: String
    /// The protocol to record it with; nil for a bridge, which carries whatever is behind it.
    public var wire: SensorProtocol?
    /// What else to know, in parentheses after the name.
    public var note: String?

    public init(vendorID: Int, productIDs: [Int]?, name: String, wire: SensorProtocol?, note: String? = nil) {
        self.vendorID = vendorID
        self.productIDs = productIDs
        self.name = name
        self.wire = wire
        self.note = note
    }

    /// Whether the device `vendor`:`product` is this one.
    public func matches(vendor: Int, product: Int) -> Bool {
        vendor == vendorID && (productIDs?.contains(product) ?? true)
    }

    /// What to do with the port at `path`: `ANT USB-m stick: use /dev/ttyUSB0:ant`.
    public func advice(path: String) -> String {
        let what = name + (note.map { " (\($0))" } ?? "")
        switch wire {
        case .nmea?: return "\(what): use \(path):nmea (the speed is hunted; @SPEED gives it)"
        case let wire?: return "\(what): use \(path):\(wire)"
        case nil: return "\(what): use \(path):nmea for a GPS (the speed is hunted), else \(path):PROTOCOL@SPEED"
        }
    }
}

extension KnownSerialDevice {
    /// The known devices, checked in order.
    public static let all: [KnownSerialDevice] = [
        // Dynastream (Garmin) ANT sticks. USB2 and USB-m go through Linux's usb_serial_simple (no
        // modem lines, speed fixed at 9600, which does not matter to them); the first stick (1004)
        // has a CP210x bridge inside, at 115200.
        KnownSerialDevice(vendorID: 0x0FCF, productIDs: [0x1008], name: "ANT USB2 stick", wire: .ant),
        KnownSerialDevice(vendorID: 0x0FCF, productIDs: [0x1009], name: "ANT USB-m stick", wire: .ant),
        KnownSerialDevice(vendorID: 0x0FCF, productIDs: [0x1004], name: "ANT USB stick (first generation)", wire: .ant),
        // u-blox receivers (USB CDC ACM: /dev/ttyACM*): u-blox 5, 6, 7, 8 and the GNSS receivers (M9, F9).
        KnownSerialDevice(
            vendorID: 0x1546, productIDs: [0x01A5, 0x01A6, 0x01A7, 0x01A8, 0x01A9], name: "u-blox GPS receiver",
            wire: .nmea),
        // Serial bridges: GPS mice (BU-353 and the like) are a receiver behind one of these.
        KnownSerialDevice(
            vendorID: 0x067B, productIDs: nil, name: "Prolific USB-serial bridge", wire: nil,
            note: "GPS receivers often at 4800/9600"),
        KnownSerialDevice(
            vendorID: 0x10C4, productIDs: [0xEA60, 0xEA70, 0xEA71], name: "Silicon Labs CP210x USB-serial bridge",
            wire: nil, note: "GPS receivers often at 4800/9600"),
        KnownSerialDevice(
            vendorID: 0x0403, productIDs: nil, name: "FTDI USB-serial bridge", wire: nil,
            note: "GPS receivers often at 4800/9600"),
        KnownSerialDevice(
            vendorID: 0x1A86, productIDs: [0x7523, 0x5523, 0x55D4], name: "WCH CH340 USB-serial bridge", wire: nil,
            note: "GPS receivers often at 4800/9600"),
    ]

    /// The first known device `vendor`:`product` is, if any.
    public static func matching(vendor: Int, product: Int) -> KnownSerialDevice? {
        all.first { $0.matches(vendor: vendor, product: product) }
    }
}
