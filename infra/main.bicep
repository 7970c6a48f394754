// The whole deployment for `azd up`: one resource group with storage, Service Bus, the
// PostgreSQL warehouse, monitoring, and the three roles as Container Apps.
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the azd environment; used to name and tag every resource.')
param environmentName string

@minLength(1)
@description('Azure region for every resource.')
param location string

@description('Work-queue partitions per priority. Must match BILLING_PARTITIONS.')
@minValue(1)
@maxValue(16)
param partitions int = 4

@secure()
@description('Administrator password of the PostgreSQL warehouse.')
param postgresAdminPassword string

@secure()
@description('API key the initiator accepts (Authorization: Bearer <key>).')
param apiKey string

var tags = { 'azd-env-name': environmentName }
var token = toLower(uniqueString(subscription().id, environmentName, location))

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module identity 'modules/identity.bicep' = {
  scope: rg
  name: 'identity'
  params: { name: 'id-billing-${token}', location: location, tags: tags }
}

module monitoring 'modules/monitoring.bicep' = {
  scope: rg
  name: 'monitoring'
  params: { token: token, location: location, tags: tags }
}

module storage 'modules/storage.bicep' = {
  scope: rg
  name: 'storage'
  params: {
    name: 'stbilling${token}'
    location: location
    tags: tags
    partitions: partitions
    principalId: identity.outputs.principalId
  }
}

module servicebus 'modules/servicebus.bicep' = {
  scope: rg
  name: 'servicebus'
  params: {
    name: 'sb-billing-${token}'
    location: location
    tags: tags
    principalId: identity.outputs.principalId
  }
}

module warehouse 'modules/postgres.bicep' = {
  scope: rg
  name: 'warehouse'
  params: {
    name: 'psql-billing-${token}'
    location: location
    tags: tags
    adminPassword: postgresAdminPassword
  }
}

module apps 'modules/apps.bicep' = {
  scope: rg
  name: 'apps'
  params: {
    token: token
    location: location
    tags: tags
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    logAnalyticsWorkspaceId: monitoring.outputs.workspaceId
    appInsightsConnectionString: monitoring.outputs.appInsightsConnectionString
    storageAccountName: storage.outputs.name
    storageAccountUrl: storage.outputs.accountUrl
    servicebusNamespace: servicebus.outputs.fullyQualifiedNamespace
    warehouseUrl: 'postgresql+psycopg://billing:${postgresAdminPassword}@${warehouse.outputs.host}:5432/billing?sslmode=require'
    apiKey: apiKey
    partitions: partitions
  }
}

output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = apps.outputs.registryLoginServer
output BILLING_STORAGE_ACCOUNT_URL string = storage.outputs.accountUrl
output BILLING_SERVICEBUS_NAMESPACE string = servicebus.outputs.fullyQualifiedNamespace
output INITIATOR_URL string = apps.outputs.initiatorUrl
