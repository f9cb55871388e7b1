import Foundation
import Synchronization

/// Lists the ANT+ devices in range of a USB ANT stick (`workout sensors scan`).
///
/// The stick is configured for continuous scan (``ANTHostPlan/Mode/scan``): one channel hears every
/// device on the ANT+ frequency, each broadcast carrying its channel id (extended data). Decoder
/// state is kept per device, so each device's first value is its own.
public enum ANTScan {
    /// A device heard during the scan.
    public struct Device: Sendable, Equatable {
        /// Its channel id (device number, type, transmission type).
        public var id: ANTDeviceID
        /// The profile's name (`heart rate`, `power` …) or `device type N`.
        public var profile: String
        /// The manufacturer's name (or id) from common page 80 / heart-rate page 2, when heard.
        public var manufacturer: String?
        /// The model number (and serial) from pages 80/81 or heart-rate page 3, when heard.
        public var product: String?
        /// The first value it sent (`142 bpm`, `231 W` …), when one was decoded.
        public var firstValue: String?
    }

    /// Scans `path` for `seconds`; returns the devices heard, in the order first heard.
    ///
    /// - Throws: the port's open error (missing, busy, no permission …) before anything is written.
    public static func run(
        path: String, settings: SerialSettings, key: ANTNetworkKey, seconds: Double, circumference: Double = 2.105,
        opener: SensorConnection.Opener? = nil, onNote: @escaping @Sendable (DriverNote) -> Void = { _ in }
    ) throws(SensorError) -> [Device] {
        let found = Mutex<(decoder: ANTDecoder, devices: [Device])>(
            (ANTDecoder(configuration: ANTDecoder.Configuration(wheelCircumference: circumference)), []))
        let connection = SensorConnection(
            path: path, tag: "ant", settings: settings, opener: opener,
            driver: ANTDriver(plan: ANTHostPlan(networkKey: key, mode: .scan))
        ) { event in
            switch event {
            case .bytes(let chunk, _):
                found.withLock { state in
                    let readings = state.decoder.decode(chunk)
                    for reading in readings { record(reading, into: &state.devices) }
                }
            case .driver(let note): onNote(note)
            case .availability: break
            }
        }
        try connection.start(waitForDevice: false)
        Thread.sleep(forTimeInterval: max(0, seconds))
        connection.stop()
        return found.withLock { $0.devices }
    }

    /// Adds what `reading` tells to the device list.
    static func record(_ reading: SensorReading, into devices: inout [Device]) {
        guard case .ant(_, let device?) = reading.source, device.type != 0 else { return }
        var index = devices.firstIndex { $0.id == device }
        if index == nil {
            guard isData(reading.value) else { return }
            let profile = ANTProfile(deviceType: device.type)?.description ?? "device type \(device.type)"
            devices.append(Device(id: device, profile: profile))
            index = devices.count - 1
        }
        guard let index else { return }
        switch reading.value {
        case .antDeviceInfo(let info):
            if let manufacturer = info.manufacturer {
                devices[index].manufacturer = ANTDeviceInfo.manufacturerName(manufacturer) ?? "manufacturer \(manufacturer)"
            }
            if let model = info.model {
                devices[index].product = "model \(model)" + (info.serial.map { " serial \($0)" } ?? "")
            } else if let serial = info.serial, devices[index].product == nil {
                devices[index].product = "serial \(serial)"
            }
        default:
            if devices[index].firstValue == nil { devices[index].firstValue = firstValue(reading.value) }
        }
    }

    private static func isData(_ value: SensorReading.Value) -> Bool {
        switch value {
        case .heartRate, .speedCadence, .power, .stride, .fitnessEquipment, .antDeviceInfo: true
        default: false
        }
    }

    private static func firstValue(_ value: SensorReading.Value) -> String? {
        switch value {
        case .heartRate(let reading): reading.beatsPerMinute > 0 ? "\(reading.beatsPerMinute) bpm" : nil
        case .power(let reading):
            (reading.instantaneousPower ?? reading.averagePower.map { Int($0.rounded()) }).map { "\($0) W" }
                ?? reading.cadence.map { "\(Int($0.rounded())) rpm" }
        case .speedCadence(let reading):
            reading.speed.map { String(format: "%.1f km/h", $0 * 3.6) } ?? reading.cadence.map { "\(Int($0.rounded())) rpm" }
        case .stride(let reading): reading.speed.map { String(format: "%.2f m/s", $0) }
        case .fitnessEquipment(let reading):
            reading.instantaneousPower.map { "\($0) W" } ?? reading.speed.map { String(format: "%.1f km/h", $0 * 3.6) }
        default: nil
        }
    }
}
