// The SQL warehouse: PostgreSQL Flexible Server, burstable tier, Microsoft Entra
// authentication only (no password exists). The person running azd is its Entra
// administrator; the postprovision hook (infra/hooks/postprovision.py) creates a database
// role for each app identity with only the rights its role needs.
//
// Network: public endpoint, TLS only. Container Apps on the Consumption plan without a
// virtual network have no outbound address that can be declared here, so the firewall
// lets Azure's own addresses in (the 0.0.0.0 rule: Azure services, not the internet) and,
// for the hook, the developer's IP; a connection still needs an Entra token for a role
// of this server. A virtual network with private access is the next step up (see docs/deploy.md).
param name string
param location string
param tags object
param administratorObjectId string
param administratorName string
@allowed([ 'User', 'ServicePrincipal', 'Group' ])
param administratorType string
param developerIpAddress string

var databaseName = 'billing'

resource server 'Microsoft.DBforPostgreSQL/flexibleServers@2025-08-01' = {
  name: name
  location: location
  tags: tags
  sku: { name: 'Standard_B1ms', tier: 'Burstable' }
  properties: {
    version: '16'
    authConfig: {
      activeDirectoryAuth: 'Enabled'
      passwordAuth: 'Disabled'
      tenantId: tenant().tenantId
    }
    storage: { storageSizeGB: 32, autoGrow: 'Disabled' }
    backup: { backupRetentionDays: 7, geoRedundantBackup: 'Disabled' }
    highAvailability: { mode: 'Disabled' }
    network: { publicNetworkAccess: 'Enabled' }
  }
}

resource administrator 'Microsoft.DBforPostgreSQL/flexibleServers/administrators@2025-08-01' = if (!empty(administratorObjectId)) {
  parent: server
  name: administratorObjectId
  properties: {
    principalName: administratorName
    principalType: administratorType
    tenantId: tenant().tenantId
  }
}

resource database 'Microsoft.DBforPostgreSQL/flexibleServers/databases@2025-08-01' = {
  parent: server
  name: databaseName
  properties: { charset: 'UTF8', collation: 'en_US.utf8' }
}

resource allowAzure 'Microsoft.DBforPostgreSQL/flexibleServers/firewallRules@2025-08-01' = {
  parent: server
  name: 'AllowAzureServices'
  properties: { startIpAddress: '0.0.0.0', endIpAddress: '0.0.0.0' }
}

resource allowDeveloper 'Microsoft.DBforPostgreSQL/flexibleServers/firewallRules@2025-08-01' = if (!empty(developerIpAddress)) {
  parent: server
  name: 'AllowDeveloper'
  properties: { startIpAddress: developerIpAddress, endIpAddress: developerIpAddress }
}

output host string = server.properties.fullyQualifiedDomainName
output database string = database.name
